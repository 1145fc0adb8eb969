package report

import (
	"fmt"
	"io"
	"strings"
)

// Concise renders one line per finding, for editors' quickfix lists, problem matchers and grep:
//
//	PATH:LINE:COL: CHECK-ID MESSAGE
//
// like ruff's concise format. The message is one line (the title, then the result's message); it starts with
// "(flaky) ", "(warning) " or "(not exercised) " for those statuses, so a problem matcher can tell warnings
// from errors. COL is 1: the kit knows lines, not columns. PATH is relative to Root; a result without a
// location inside Root points at the file that declares the provider. A summary line ends the output; it has
// no PATH:LINE:COL prefix, so matchers skip it.
type Concise struct {
	// Root is the directory paths are made relative to; empty means the report's project directory.
	Root string
	// Manifest is the project file results without a location point at when the report does not name one.
	Manifest string
}

// Render writes r, one line per failed, flaky, warning or not_exercised check.
func (c Concise) Render(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("render concise: no report")
	}
	var b strings.Builder
	fs := findings(r, c.Root, c.Manifest)
	for _, f := range fs {
		fmt.Fprintf(&b, "%s:%d:1: %s %s%s\n", f.path, f.line, f.res.Check, f.prefix, oneLine(f.message))
	}
	s := summaryOf(r)
	fmt.Fprintf(&b, "astrabox: %d finding(s) in %d checks (%d failed, %d flaky, %d warning, %d not exercised), seed %d\n",
		len(fs), s.Total, s.Failed, s.Flaky, s.Warning, s.NotExercised, r.Seed)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("render concise: %w", err)
	}
	return nil
}

// finding is one result that a line-oriented format reports, with where it points.
type finding struct {
	res     *Result
	path    string
	line    int
	prefix  string
	message string
}

// findings are the failed, flaky, warning and not_exercised results of r, each with a path relative to root
// (the project when empty) and a line, falling back to the declaring file; message is the title and the
// result's message, made safe to print.
func findings(r *Report, root, manifest string) []finding {
	if root == "" {
		root = r.Provider.Project
	}
	var out []finding
	for i := range r.Results {
		res := &r.Results[i]
		var prefix string
		switch res.Status {
		case StatusFailed:
		case StatusFlaky:
			prefix = "(flaky) "
		case StatusWarning:
			prefix = "(warning) "
		case StatusNotExercised:
			prefix = "(not exercised) "
		default:
			continue
		}
		f := finding{res: res, prefix: prefix, message: res.Title}
		if res.Message != "" {
			f.message += ": " + res.Message
		}
		f.message = sanitize(f.message)
		if p, ok := relIfLoc(root, r.Provider.Project, primaryLocation(res)); ok {
			f.path, f.line = p, max(primaryLocation(res).Line, 1)
		} else {
			f.path, f.line = SARIF{Manifest: manifest}.declarationPath(root, r.Provider)
		}
		out = append(out, f)
	}
	return out
}

// oneLine joins the lines of s with " / " so a finding stays on one line.
func oneLine(s string) string {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' })
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	return strings.Join(fields, " / ")
}
