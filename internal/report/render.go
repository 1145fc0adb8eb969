package report

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
)

// Renderer writes a report in one output format. Render refuses a nil report with an error ("render FORMAT:
// no report") and writes nothing: a run that could not decide has no report to render (TestForFormats
// holds every registered format to it).
type Renderer interface {
	Render(w io.Writer, r *Report) error
}

// Undecided reports whether some check could not be decided (not_exercised): such a run never reads as
// PASSED; the command line exits with 1 when a check failed, else with 2 (docs/report-format.md).
func (r *Report) Undecided() bool {
	for _, res := range r.Results {
		if res.Status == StatusNotExercised {
			return true
		}
	}
	return false
}

// HasFailures reports whether the run breaks the contract: at least one check failed or was flaky (a flaky
// check saw the breach in some runs, which is a breach). Warnings and skipped checks do not count. The command
// line exits with 1 exactly when this is true.
func (r *Report) HasFailures() bool {
	for _, res := range r.Results {
		if res.Status == StatusFailed || res.Status == StatusFlaky {
			return true
		}
	}
	return false
}

// rank orders statuses from worst (highest) to best: failed > flaky > warning > passed > skipped. Unknown
// statuses rank below skipped.
func rank(s Status) int {
	switch s {
	case StatusFailed:
		return 5
	case StatusFlaky:
		return 4
	case StatusWarning:
		return 3
	case StatusNotExercised:
		return 3
	case StatusPassed:
		return 2
	case StatusSkipped, StatusNotApplicable:
		return 1
	}
	return 0
}

// validStatus reports whether s is one of the documented statuses.
func validStatus(s Status) bool { return rank(s) > 0 }

// primaryLocation is where a result points: its own location, else the first evidence that has one.
func primaryLocation(res *Result) *Location {
	if res.Location != nil && res.Location.Path != "" {
		return res.Location
	}
	for i := range res.Evidence {
		if l := res.Evidence[i].Location; l != nil && l.Path != "" {
			return l
		}
	}
	return nil
}

// relPath returns p as a slash-separated path relative to root, and whether that was possible. A relative p
// is taken as relative to root already; an absolute p outside root, or a relative p that climbs out of it,
// cannot be made relative.
func relPath(root, p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		if root == "" {
			return "", false
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return "", false
		}
		p = rel
	}
	p = path.Clean(filepath.ToSlash(p))
	if p == ".." || strings.HasPrefix(p, "../") || p == "." {
		return "", false
	}
	return p, true
}

// sanitize makes provider-supplied text safe to print: control characters other than newline become visible
// escapes (so an escape sequence in a log line cannot colour or move the terminal), tabs become spaces and
// carriage returns are dropped.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString("    ")
		case r == '\r':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// locationString formats a location as path:line (just path when the line is unknown).
func locationString(l *Location) string {
	if l == nil {
		return ""
	}
	if l.Line > 0 {
		return fmt.Sprintf("%s:%d", l.Path, l.Line)
	}
	return l.Path
}

// evidenceContext is the one-line context of a piece of evidence: location (written by where), replica,
// callback, call and scenario.
func evidenceContext(e *Evidence, where func(*Location) string) string {
	var parts []string
	if e.Location != nil && e.Location.Path != "" {
		parts = append(parts, "at "+where(e.Location))
	}
	if e.Replica != "" {
		parts = append(parts, "replica "+e.Replica)
	}
	if e.Callback != "" {
		parts = append(parts, "callback "+e.Callback)
	}
	if e.CallID != "" {
		parts = append(parts, "call "+e.CallID)
	}
	if e.Scenario != "" {
		parts = append(parts, "scenario "+e.Scenario)
	}
	return strings.Join(parts, ", ")
}

// summaryOf counts r's results afresh, so renderers never print a stale summary.
func summaryOf(r *Report) Summary {
	c := Report{Results: r.Results}
	c.Summarize()
	return c.Summary
}
