package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// mapInstalledSources returns a copy of the report whose locations in an installed copy of the provider (a
// site-packages directory, such as the project's .venv after a non-editable install) point at the project's
// own source file instead, when the project holds exactly that module path (under the project, src/ or any
// code directory); other locations stay as they are. The report is not modified.
func mapInstalledSources(rep *report.Report) *report.Report {
	project := rep.Provider.Project
	if project == "" {
		return rep
	}
	m := &sourceMapper{project: project, cache: map[string]string{}}
	changed := false
	move := func(l *report.Location) *report.Location {
		if l == nil {
			return nil
		}
		p, ok := m.source(l.Path)
		if !ok {
			return l
		}
		changed = true
		return &report.Location{Path: p, Line: l.Line}
	}
	c := *rep
	c.Results = make([]report.Result, len(rep.Results))
	for i, r := range rep.Results {
		r.Location = move(r.Location)
		ev := make([]report.Evidence, len(r.Evidence))
		for j, e := range r.Evidence {
			e.Location = move(e.Location)
			ev[j] = e
		}
		r.Evidence = ev
		c.Results[i] = r
	}
	if !changed {
		return rep
	}
	return &c
}

// sourceMapper finds the project file an installed module file was copied from.
type sourceMapper struct {
	project string
	cache   map[string]string
	files   []string // project-relative slash paths of the project's Python files, walked once
	walked  bool
}

const sitePackages = "/site-packages/"

// source returns the project-relative source of an installed file, and whether there is one.
func (m *sourceMapper) source(path string) (string, bool) {
	slash := filepath.ToSlash(path)
	i := strings.LastIndex(slash, sitePackages)
	if i < 0 {
		return "", false
	}
	module := slash[i+len(sitePackages):]
	if p, ok := m.cache[module]; ok {
		return p, p != ""
	}
	found := ""
	for _, cand := range []string{module, "src/" + module} {
		if st, err := os.Stat(filepath.Join(m.project, filepath.FromSlash(cand))); err == nil && st.Mode().IsRegular() {
			found = cand
			break
		}
	}
	if found == "" {
		for _, f := range m.projectFiles() {
			if strings.HasSuffix(f, "/"+module) {
				found = f
				break
			}
		}
	}
	m.cache[module] = found
	return found, found != ""
}

// projectFiles lists the project's .py files in lexical order, skipping hidden directories (.venv, .git),
// virtual environments, site-packages and node_modules.
func (m *sourceMapper) projectFiles() []string {
	if m.walked {
		return m.files
	}
	m.walked = true
	_ = filepath.WalkDir(m.project, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != m.project && (strings.HasPrefix(name, ".") || name == "site-packages" || name == "node_modules" || name == "venv" || name == "__pycache__") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "pyvenv.cfg")); err == nil && p != m.project {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".py") {
			if rel, err := filepath.Rel(m.project, p); err == nil {
				m.files = append(m.files, filepath.ToSlash(rel))
			}
		}
		return nil
	})
	return m.files
}
