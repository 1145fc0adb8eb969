package discovery

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// Resolution is the outcome of choosing the provider to test.
type Resolution struct {
	// Chosen is the provider to test.
	Chosen Declaration
	// All lists every distinct declaration considered (project ones first, then installed ones).
	All []Declaration
	// Warnings are notes for the user (a forced pick, stale installed metadata, ...).
	Warnings []string
}

// NormalizeName normalizes a distribution name as PEP 503 does: lowercase, runs of '-', '_' and '.'
// replaced by one '-'.
func NormalizeName(name string) string {
	return strings.ToLower(nameSeps.ReplaceAllString(strings.TrimSpace(name), "-"))
}

var nameSeps = regexp.MustCompile(`[-_.]+`)

// Resolve merges the project's declarations with those of installed distributions and picks the provider.
//
// A declaration of the project and the same declaration installed from the same distribution (an editable
// or regular install of this project: same PEP 503 name, or a direct_url.json pointing at the project
// directory, and the same entry-point name and reference) count once.
// Installed declarations of the project's own distribution that differ from its current files are stale
// metadata and are reported as a warning, not counted, when the project declares its provider statically.
// Any other plurality is a conflict (*ConflictError, EP-CONFLICT: the platform refuses to start). pick (the
// --provider flag) chooses one by entry-point name, or "name@distribution" when the name alone is
// ambiguous, and adds a warning that the platform itself would refuse to start. With no declaration at all
// the error is *NoProviderError. p may be nil (installed metadata only).
func Resolve(p *Project, installed []Declaration, pick string) (Resolution, error) {
	var res Resolution
	var own string
	var projectDecls []Declaration
	if p != nil {
		own = NormalizeName(p.Name)
		projectDecls = append(projectDecls, p.Declarations...)
	}
	all := append([]Declaration{}, projectDecls...)
	seen := map[string]bool{}
	for _, in := range installed {
		key := NormalizeName(in.Distribution) + "\x00" + in.Name + "\x00" + in.Ref.String() + "\x00" + in.Value
		if seen[key] {
			continue // the same distribution found twice on sys.path
		}
		seen[key] = true
		sameProject := own != "" && NormalizeName(in.Distribution) == own || p != nil && installedFrom(in, p.Dir)
		if sameProject {
			merged := false
			for i := range all[:len(projectDecls)] {
				if all[i].Name == in.Name && sameRef(all[i], in) {
					all[i].AlsoInstalled = in.Where()
					merged = true
					break
				}
			}
			if merged {
				continue
			}
			if len(projectDecls) > 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf(
					"%s declares %s = %q, which the project files no longer declare: its installed metadata is stale; "+
						"reinstall the project (pip install -e .) so the platform sees what you test",
					in.Where(), in.Name, in.Value))
				continue
			}
		}
		all = append(all, in)
	}
	res.All = all

	switch {
	case len(all) == 0:
		return res, noProvider(p)
	case pick == "" && len(all) == 1:
		res.Chosen = all[0]
		return res, nil
	case pick == "":
		return res, &ConflictError{Declarations: all}
	}

	matches := pickMatches(all, pick)
	switch len(matches) {
	case 1:
		res.Chosen = matches[0]
		if len(all) > 1 {
			res.Warnings = append(res.Warnings, fmt.Sprintf(
				"--provider %s chose one of %d declared providers; the platform itself would refuse to start with all of them installed (EP-CONFLICT)",
				pick, len(all)))
		}
		return res, nil
	case 0:
		return res, &Error{Message: fmt.Sprintf("--provider %q matches none of the declared providers: %s", pick, describeNames(all)),
			Hint: "pass one of the names listed"}
	default:
		return res, &Error{Message: fmt.Sprintf("--provider %q matches %d declarations: %s", pick, len(matches), describeNames(matches)),
			Hint: "disambiguate with --provider NAME@DISTRIBUTION"}
	}
}

// installedFrom reports whether an installed declaration's direct_url.json points at dir (a local install of
// the project, e.g. pip install -e DIR).
func installedFrom(d Declaration, dir string) bool {
	u, err := url.Parse(d.SourceURL)
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return false
	}
	return filepath.Clean(u.Path) == filepath.Clean(dir)
}

// sameRef compares a project declaration with an installed one by parsed reference, falling back to the text.
func sameRef(a, b Declaration) bool {
	if a.Ref.Module != "" && b.Ref.Module != "" {
		return a.Ref.Equal(b.Ref)
	}
	return strings.TrimSpace(a.Value) == strings.TrimSpace(b.Value)
}

func pickMatches(all []Declaration, pick string) []Declaration {
	var out []Declaration
	for _, d := range all {
		if d.Name == pick {
			out = append(out, d)
		}
	}
	if len(out) > 0 {
		return out
	}
	if i := strings.LastIndex(pick, "@"); i > 0 {
		name, dist := pick[:i], NormalizeName(pick[i+1:])
		for _, d := range all {
			if d.Name == name && NormalizeName(d.Distribution) == dist {
				out = append(out, d)
			}
		}
	}
	return out
}

func describeNames(ds []Declaration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%s (%s)", d.Name, d.Where())
	}
	return strings.Join(parts, ", ")
}

// noProvider builds the error for a project without any declaration, with a snippet to paste.
func noProvider(p *Project) error {
	e := &NoProviderError{}
	name := ""
	if p != nil {
		e.ProjectDir, e.Dynamic, name = p.Dir, p.DynamicEntryPoints, p.Name
		e.SetupPy, e.SetupPyGroupLine = p.SetupPy, p.SetupPyGroupLine
	}
	e.Snippet = Snippet(name)
	return e
}

// Snippet returns the pyproject.toml declaration to add for a project of the given name, with an entry-point
// name and module derived from it ("my-provider" gives my_provider = "my_provider.provider:Provider").
func Snippet(projectName string) string {
	mod := strings.ToLower(nameSeps.ReplaceAllString(strings.TrimSpace(projectName), "_"))
	mod = regexp.MustCompile(`[^a-z0-9_]`).ReplaceAllString(mod, "")
	if mod == "" || mod[0] >= '0' && mod[0] <= '9' {
		mod = "my_provider"
	}
	return fmt.Sprintf("[project.entry-points.%q]\n%s = \"%s.provider:PreparationProvider\"\n", Group, mod, mod)
}
