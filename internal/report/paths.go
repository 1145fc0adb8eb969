package report

import "path/filepath"

// rootRel makes a location path relative to root: a relative path is relative to the project (as every
// path of a report is), an absolute one is taken as it is. It reports false for a path outside root.
func rootRel(root, project, p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) && project != "" {
		p = filepath.Join(project, filepath.FromSlash(p))
	}
	return relPath(root, p)
}
