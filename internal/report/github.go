package report

import (
	"fmt"
	"io"
	"strings"
)

// GitHub renders the report as GitHub Actions workflow commands, one annotation per failed, flaky, warning or
// not-exercised check:
//
//	::error file=PATH,line=N,title=CHECK-ID::TITLE: MESSAGE (newlines escaped)
//
// Failed and flaky checks are errors (a check of severity warning or note gives a warning or notice); warnings
// are warnings; a not-exercised check (the kit could not decide it) is a warning titled "(not exercised)". PATH is relative to Root (the provider's project directory when empty), which should be the
// repository root for the annotation to land on the file; a result without a location inside Root gets no
// file property and shows on the run summary. A plain summary line ends the output.
type GitHub struct {
	// Root is the directory paths are made relative to; empty means the report's project directory.
	Root string
}

// Render writes r as workflow commands.
func (g GitHub) Render(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("render github: no report")
	}
	root := g.Root
	if root == "" {
		root = r.Provider.Project
	}
	var b strings.Builder
	for i := range r.Results {
		res := &r.Results[i]
		var cmd string
		switch res.Status {
		case StatusFailed, StatusFlaky:
			cmd = "error"
			switch res.Severity {
			case SeverityWarning:
				cmd = "warning"
			case SeverityNote:
				cmd = "notice"
			}
		case StatusWarning, StatusNotExercised:
			cmd = "warning"
		default:
			continue
		}
		var props []string
		if l := primaryLocation(res); l != nil {
			if p, ok := rootRel(root, r.Provider.Project, l.Path); ok {
				props = append(props, "file="+escapeProperty(p))
				if l.Line > 0 {
					props = append(props, fmt.Sprintf("line=%d", l.Line))
				}
			}
		}
		props = append(props, "title="+escapeProperty(res.Check))
		text := res.Title
		switch res.Status {
		case StatusFlaky:
			text = "(flaky) " + text
		case StatusNotExercised:
			text = "(not exercised) " + text
		}
		if res.Message != "" {
			text += ": " + res.Message
		}
		if len(res.Clauses) > 0 {
			text += "\nClauses: " + strings.Join(res.Clauses, ", ")
		}
		if res.DecidedOver != "" {
			text += "\nDecided over: " + res.DecidedOver
		}
		if res.Hint != "" && res.Status != StatusNotExercised {
			text += "\nHint: " + res.Hint
		}
		fmt.Fprintf(&b, "::%s %s::%s\n", cmd, strings.Join(props, ","), escapeData(text))
	}
	s := summaryOf(r)
	fmt.Fprintf(&b, "astrabox: %d checks, passed %d, failed %d, flaky %d, warning %d, skipped %d, not applicable %d, not exercised %d, seed %d\n",
		s.Total, s.Passed, s.Failed, s.Flaky, s.Warning, s.Skipped, s.NotApplicable, s.NotExercised, r.Seed)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("render github: %w", err)
	}
	return nil
}

// escapeData escapes a workflow command's message: % as %25, CR as %0D, LF as %0A.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command property value: like a message, plus : as %3A and , as %2C.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
