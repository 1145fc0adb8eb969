package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSourceRoot: report paths are relative to --source-root, else a CI workspace that holds the project, else
// the git repository holding it, else the project itself (a tree without .git, such as a source tarball).
func TestSourceRoot(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	project := filepath.Join(repo, "providers", "acme")
	plain := filepath.Join(tmp, "tarball", "acme")
	for _, d := range []string{filepath.Join(repo, ".git"), project, plain} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := func(kv map[string]string) *Factory {
		return &Factory{Getenv: func(k string) string { return kv[k] }}
	}
	for _, tc := range []struct {
		name, flag, project string
		env                 map[string]string
		want                string
	}{
		{"the git repository holding the project", "", project, nil, repo},
		{"no repository: the project", "", plain, nil, plain},
		{"the flag first", tmp, project, map[string]string{"GITHUB_WORKSPACE": repo}, tmp},
		{"GitHub's workspace holding the project", "", plain, map[string]string{"GITHUB_WORKSPACE": filepath.Dir(plain)}, filepath.Dir(plain)},
		{"GitLab's project directory holding the project", "", plain, map[string]string{"CI_PROJECT_DIR": tmp}, tmp},
		{"a workspace elsewhere is not a root", "", project, map[string]string{"GITHUB_WORKSPACE": plain}, repo},
		{"no project, no root", "", "", nil, ""},
	} {
		if got := sourceRoot(env(tc.env), tc.flag, tc.project); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
