package coverage

import (
	"path/filepath"
	"strings"
)

// RelPath is path relative to root with forward slashes, as CI tools match files against a repository;
// a path outside root (or with no root) stays as it is.
func RelPath(root, path string) string {
	if root == "" {
		return filepath.ToSlash(path)
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}
