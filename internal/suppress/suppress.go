// Package suppress applies inline suppressions written in the provider's own source: a comment
//
//	# astrabox: ignore[LEAK-LOG] the token is a test fixture's, not a real one
//
// on the line a finding points at turns that check's failed, flaky or warning result into a skipped one
// whose message is "suppressed at FILE:LINE: REASON". The result stays in every report (never as passed: the
// breach was seen), and the exit status no longer counts it. A comment may name several checks
// (ignore[LEAK-LOG, LEAK-ERROR]); a reason is required, as for the skip setting.
package suppress

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// comment matches an inline suppression: the check IDs and the reason.
var comment = regexp.MustCompile(`#\s*astrabox:\s*ignore\[([^\]]*)\]\s*(.*)$`)

// MaxFileSize bounds the source files read for suppressions.
const MaxFileSize = 4 << 20

// Apply returns a new report: rep with the results suppressed whose location (the result's, or one of its
// evidence's) is a line of a file inside the project that carries an ignore comment naming the check, and
// the summary recomputed; rep is left as it was. It also returns warnings for comments it could not honour
// (no reason given, a check that does not exist). known says whether a check ID exists (nil accepts any).
// The reason quoted in a suppressed result's message is the provider's source text: mask the report after.
func Apply(in *report.Report, known func(string) bool) (*report.Report, []string) {
	if in == nil || in.Provider.Project == "" {
		return in, nil
	}
	rep := *in
	rep.Results = append([]report.Result(nil), in.Results...)
	s := &scanner{project: rep.Provider.Project, files: map[string][]string{}, warned: map[string]bool{}, known: known}
	for i := range rep.Results {
		res := &rep.Results[i]
		switch res.Status {
		case report.StatusFailed, report.StatusFlaky, report.StatusWarning:
		default:
			continue
		}
		for _, l := range locations(res) {
			if where, reason, ok := s.ignores(l, res.Check); ok {
				res.Status = report.StatusSkipped
				res.Message = fmt.Sprintf("suppressed at %s: %s (the finding was: %s)", where, reason, res.Message)
				break
			}
		}
	}
	rep.Summarize()
	return &rep, s.warnings
}

// locations are the places a result points at: its own location, then each evidence location.
func locations(res *report.Result) []*report.Location {
	var out []*report.Location
	if res.Location != nil {
		out = append(out, res.Location)
	}
	for i := range res.Evidence {
		if l := res.Evidence[i].Location; l != nil {
			out = append(out, l)
		}
	}
	return out
}

type scanner struct {
	project  string
	files    map[string][]string
	warned   map[string]bool
	warnings []string
	known    func(string) bool
}

// ignores reports whether the line l points at suppresses check, with where (FILE:LINE, relative to the
// project) and the reason.
func (s *scanner) ignores(l *report.Location, check string) (string, string, bool) {
	if l.Path == "" || l.Line <= 0 {
		return "", "", false
	}
	p := l.Path
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.project, filepath.FromSlash(p))
	}
	rel, err := filepath.Rel(s.project, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", "", false // only the provider's own source can suppress its findings
	}
	lines := s.read(p)
	if l.Line > len(lines) {
		return "", "", false
	}
	m := comment.FindStringSubmatch(lines[l.Line-1])
	if m == nil {
		return "", "", false
	}
	where := fmt.Sprintf("%s:%d", filepath.ToSlash(rel), l.Line)
	ids, reason := strings.Split(m[1], ","), printable(strings.TrimSpace(m[2]))
	named := false
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if s.known != nil && !s.known(id) {
			s.warn(where, fmt.Sprintf("astrabox: ignore[%s] names no check (see `astrabox conformance list`)", id))
		}
		named = named || id == check
	}
	if !named {
		return "", "", false
	}
	if reason == "" {
		s.warn(where, fmt.Sprintf("astrabox: ignore[%s] gives no reason, so %s is not suppressed: write the reason after the bracket", m[1], check))
		return "", "", false
	}
	return where, reason, true
}

func (s *scanner) warn(where, msg string) {
	msg = printable(msg)
	if key := where + msg; !s.warned[key] {
		s.warned[key] = true
		s.warnings = append(s.warnings, where+": "+msg)
	}
}

// printable escapes the control characters a source line may carry (a carriage return, a terminal escape)
// so that a warning quoting it is one line of plain text on any terminal.
func printable(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// read returns a file's lines (none when it cannot be read or is too large), once per file.
func (s *scanner) read(p string) []string {
	if lines, ok := s.files[p]; ok {
		return lines
	}
	var lines []string
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Size() <= MaxFileSize {
		if f, err := os.Open(p); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64*1024), MaxFileSize)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			f.Close()
		}
	}
	s.files[p] = lines
	return lines
}
