package discovery

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// RequiresPython is a project's requires-python specifier ([project] requires-python in pyproject.toml, or
// python_requires in setup.cfg [options]) with where it is written.
type RequiresPython struct {
	// Spec is the specifier as written, e.g. ">=3.10,<4".
	Spec string
	// File and Line locate it.
	File string
	Line int
}

// Allows reports whether a Python version satisfies the specifier, judged as PEP 440 does for a final
// release: clauses separated by commas, each with one of == != <= >= < > ~= === and a release number
// (== and != accept a trailing .*). A clause it cannot read is an error.
func (r RequiresPython) Allows(v [3]int) (bool, error) {
	for _, clause := range strings.Split(r.Spec, ",") {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			continue
		}
		ok, err := allowsClause(clause, v)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// specOps lists the operators, longest first so that ">=" is not read as ">".
var specOps = []string{"===", "~=", "==", "!=", "<=", ">=", "<", ">"}

func allowsClause(clause string, v [3]int) (bool, error) {
	op := ""
	for _, o := range specOps {
		if strings.HasPrefix(clause, o) {
			op = o
			break
		}
	}
	if op == "" {
		return false, fmt.Errorf("%q has no comparison operator", clause)
	}
	text := strings.TrimSpace(clause[len(op):])
	wild := strings.HasSuffix(text, ".*")
	if wild && op != "==" && op != "!=" {
		return false, fmt.Errorf("%q: only == and != accept .*", clause)
	}
	rel, err := parseRelease(strings.TrimSuffix(text, ".*"))
	if err != nil {
		return false, fmt.Errorf("%q: %w", clause, err)
	}
	have := v[:]
	switch op {
	case "==", "===":
		if wild {
			return prefixEqual(have, rel), nil
		}
		return compareRelease(have, rel) == 0, nil
	case "!=":
		if wild {
			return !prefixEqual(have, rel), nil
		}
		return compareRelease(have, rel) != 0, nil
	case "<=":
		return compareRelease(have, rel) <= 0, nil
	case ">=":
		return compareRelease(have, rel) >= 0, nil
	case "<":
		return compareRelease(have, rel) < 0, nil
	case ">":
		return compareRelease(have, rel) > 0, nil
	}
	// ~=X.Y[.Z]: >= X.Y[.Z] and the same release but for the last part.
	if len(rel) < 2 {
		return false, fmt.Errorf("%q: ~= needs at least two release parts", clause)
	}
	return compareRelease(have, rel) >= 0 && prefixEqual(have, rel[:len(rel)-1]), nil
}

// parseRelease reads "3.10.2" (up to the first non-numeric part; pre- and post-release tags are refused).
func parseRelease(s string) ([]int, error) {
	if s == "" {
		return nil, errors.New("no version")
	}
	var out []int
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 || len(part) > 6 {
			return nil, fmt.Errorf("%q is not a release number like 3.10", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// compareRelease compares releases, padding the shorter with zeros.
func compareRelease(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func prefixEqual(have, prefix []int) bool {
	for i, p := range prefix {
		h := 0
		if i < len(have) {
			h = have[i]
		}
		if h != p {
			return false
		}
	}
	return true
}

// readRequiresPython reads the project's requires-python, from pyproject.toml [project] or else setup.cfg
// [options] python_requires; ok is false when neither says.
func readRequiresPython(dir string) (RequiresPython, bool, error) {
	src, path, err := readOptional(filepath.Join(dir, "pyproject.toml"))
	if err != nil {
		return RequiresPython{}, false, err
	}
	if path != "" {
		doc, err := decodeTOML(path, src)
		if err != nil {
			return RequiresPython{}, false, err
		}
		project, _ := table(doc, "project")
		if s, ok := project["requires-python"].(string); ok {
			return RequiresPython{Spec: s, File: path, Line: keyLines(src)[pathKey("project", "requires-python")]}, true, nil
		}
	}
	src, path, err = readOptional(filepath.Join(dir, "setup.cfg"))
	if err != nil || path == "" {
		return RequiresPython{}, false, err
	}
	cfg, err := parseINI(path, src)
	if err != nil {
		return RequiresPython{}, false, err
	}
	if s := cfg.section("options"); s != nil {
		if o := s.option("python_requires"); o != nil {
			return RequiresPython{Spec: strings.Join(strings.Fields(strings.Join(o.Lines, " ")), " "), File: path, Line: o.Line}, true, nil
		}
	}
	return RequiresPython{}, false, nil
}
