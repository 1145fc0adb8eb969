package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-runewidth"

	"github.com/astrabox-dev/astrabox/internal/term"
)

// Text renders the report for a person at a terminal or reading a CI log: results grouped by area (areas with
// failures first), each failed, flaky or warning check with its clauses, message, evidence and hint, skipped
// checks with their reason, passed checks as a compact list of IDs, and a summary table. Every line fits in
// Width columns (DefaultWidth when not positive, never fewer than 40); with plain styles the output holds no
// escape sequence.
type Text struct {
	Styles term.Styles
	Width  int
}

// minWidth is the narrowest layout the text renderer produces.
const minWidth = 40

// labelWidth is the column where result bodies start: two spaces, a five-letter label, two spaces.
const labelWidth = 9

// Render writes r as text.
func (t *Text) Render(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("render text: no report")
	}
	width := t.Width
	if width <= 0 {
		width = term.DefaultWidth
	}
	if width < minWidth {
		width = minWidth
	}
	p := &printer{s: t.Styles, width: width, root: r.Provider.Project, cov: r.Coverage}
	p.header(r)
	for _, g := range groupByArea(r.Results) {
		p.area(g)
	}
	p.summary(r)
	p.coverage(r.Coverage)
	_, err := io.WriteString(w, p.b.String())
	if err != nil {
		return fmt.Errorf("render text: %w", err)
	}
	return nil
}

// areaGroup is the results of one area, worst first.
type areaGroup struct {
	name    string
	results []*Result
	worst   int
}

// groupByArea groups results by area. Areas are ordered by their worst status (failures first), then by first
// appearance; within an area results are ordered failed, flaky, warning, skipped, passed, keeping report order
// among equals.
func groupByArea(results []Result) []*areaGroup {
	var groups []*areaGroup
	byName := map[string]*areaGroup{}
	for i := range results {
		res := &results[i]
		name := res.Area
		if name == "" {
			name = "Other"
		}
		g, ok := byName[name]
		if !ok {
			g = &areaGroup{name: name}
			byName[name] = g
			groups = append(groups, g)
		}
		g.results = append(g.results, res)
		if rank(res.Status) > g.worst {
			g.worst = rank(res.Status)
		}
	}
	slices.SortStableFunc(groups, func(a, b *areaGroup) int { return cmp.Compare(b.worst, a.worst) })
	for _, g := range groups {
		slices.SortStableFunc(g.results, func(a, b *Result) int { return cmp.Compare(textOrder(a.Status), textOrder(b.Status)) })
	}
	return groups
}

// textOrder is the order of statuses within an area in the text report.
func textOrder(s Status) int {
	switch s {
	case StatusFailed:
		return 0
	case StatusFlaky:
		return 1
	case StatusNotExercised:
		return 2
	case StatusWarning:
		return 3
	case StatusSkipped:
		return 4
	case StatusNotApplicable:
		return 5
	case StatusPassed:
		return 6
	}
	return 7
}

// statusWords is a status as words ("not exercised").
func statusWords(s Status) string { return strings.ReplaceAll(string(s), "_", " ") }

// printer accumulates the text report.
type printer struct {
	s     term.Styles
	width int
	root  string
	b     strings.Builder
	cov   *Coverage // the report's coverage, for the notes next to verdicts (coverage.go)
}

// where formats a location, relative to the project when it lies inside it.
func (p *printer) where(l *Location) string {
	if rel, ok := relPath(p.root, l.Path); ok {
		return locationString(&Location{Path: rel, Line: l.Line})
	}
	return locationString(l)
}

// span is a run of text drawn in one style.
type span struct {
	text  string
	style lipgloss.Style
	// raw keeps text as one word, spaces included (it must be short and hold no newline).
	raw bool
}

// word is one unbreakable piece of a wrapped line.
type word struct {
	text  string
	style lipgloss.Style
}

// para writes spans as a paragraph: the first line starts after a prefix of firstCol visible columns (already
// written by the caller), following lines are indented by indent spaces. Newlines in span text force breaks;
// a word wider than a line is cut.
func (p *printer) para(firstCol, indent int, spans ...span) {
	var lines [][]word
	var cur []word
	col := firstCol
	flush := func() {
		lines = append(lines, cur)
		cur = nil
		col = indent
	}
	add := func(f string, st lipgloss.Style) {
		for _, piece := range hardBreak(f, p.width-max(indent, firstCol)) {
			wlen := runewidth.StringWidth(piece)
			need := wlen
			if len(cur) > 0 {
				need++
			}
			if len(cur) > 0 && col+need > p.width {
				flush()
				need = wlen
			}
			cur = append(cur, word{piece, st})
			col += need
		}
	}
	for _, sp := range spans {
		if sp.raw {
			add(sanitize(sp.text), sp.style)
			continue
		}
		for li, line := range strings.Split(sanitize(sp.text), "\n") {
			if li > 0 {
				flush()
			}
			for _, f := range strings.Fields(line) {
				add(f, sp.style)
			}
		}
	}
	lines = append(lines, cur)
	for i, ln := range lines {
		if i > 0 {
			p.b.WriteString(strings.Repeat(" ", indent))
		}
		for j, wd := range ln {
			if j > 0 {
				p.b.WriteByte(' ')
			}
			p.b.WriteString(wd.style.Render(wd.text))
		}
		p.b.WriteByte('\n')
	}
}

// hardBreak splits a word longer than max columns into pieces that fit.
func hardBreak(w string, max int) []string {
	if max < 1 {
		max = 1
	}
	if runewidth.StringWidth(w) <= max {
		return []string{w}
	}
	var out []string
	var cur strings.Builder
	n := 0
	for _, r := range w {
		rw := runewidth.RuneWidth(r)
		if n+rw > max && n > 0 {
			out = append(out, cur.String())
			cur.Reset()
			n = 0
		}
		cur.WriteRune(r)
		n += rw
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// line writes a pre-styled line whose visible width the caller has kept within bounds.
func (p *printer) line(s string) {
	p.b.WriteString(s)
	p.b.WriteByte('\n')
}

// header writes who was tested, with what.
func (p *printer) header(r *Report) {
	tool := r.Tool.Name
	if tool == "" {
		tool = "astrabox"
	}
	if r.Tool.Version != "" {
		tool += " " + r.Tool.Version
	}
	p.para(0, 2, span{text: tool + " conformance report", style: p.s.Heading})
	prov := r.Provider
	name := prov.Name
	if name == "" {
		name = "(unnamed provider)"
	}
	spans := []span{{text: "provider:", style: p.s.Dim}, {text: name, style: p.s.Code}}
	if prov.EntryPoint != "" {
		spans = append(spans, span{text: "(" + prov.EntryPoint + ")", style: p.s.Dim})
	} else if prov.Target != "" {
		spans = append(spans, span{text: "(" + prov.Target + ")", style: p.s.Dim})
	}
	if prov.SessionBound {
		spans = append(spans, span{text: "session-bound", style: p.s.Dim})
	}
	p.b.WriteString("  ")
	p.para(2, 4, spans...)
	spans = spans[:0]
	if prov.Project != "" {
		spans = append(spans, span{text: "project:", style: p.s.Dim}, span{text: prov.Project + ",", style: p.s.Location})
	}
	if prov.Python != "" {
		spans = append(spans, span{text: "python", style: p.s.Dim}, span{text: prov.Python + ",", style: p.s.Code})
	}
	spans = append(spans, span{text: "seed", style: p.s.Dim}, span{text: fmt.Sprint(r.Seed), style: p.s.Code})
	p.b.WriteString("  ")
	p.para(2, 4, spans...)
}

// label returns the styled five-column status label.
func (p *printer) label(s Status) (string, lipgloss.Style) {
	switch s {
	case StatusFailed:
		return "FAIL ", p.s.Fail
	case StatusFlaky:
		return "FLAKY", p.s.Flaky
	case StatusWarning:
		return "WARN ", p.s.Warn
	case StatusSkipped:
		return "SKIP ", p.s.Skip
	case StatusPassed:
		return "PASS ", p.s.Pass
	case StatusNotApplicable:
		return "N/A  ", p.s.Skip
	case StatusNotExercised:
		return "NOTEX", p.s.Warn
	}
	return "?????", p.s.Dim
}

// area writes one area: heading with counts, detailed results, then passed checks.
func (p *printer) area(g *areaGroup) {
	counts := map[Status]int{}
	for _, res := range g.results {
		counts[res.Status]++
	}
	var parts []string
	for _, s := range []Status{StatusFailed, StatusFlaky, StatusNotExercised, StatusWarning, StatusSkipped, StatusNotApplicable, StatusPassed} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], statusWords(s)))
		}
	}
	p.b.WriteByte('\n')
	p.para(0, 2, span{text: g.name, style: p.s.Heading}, span{text: "(" + strings.Join(parts, ", ") + ")", style: p.s.Dim})
	var passed []*Result
	for _, res := range g.results {
		if res.Status == StatusPassed {
			passed = append(passed, res)
			continue
		}
		p.result(res)
	}
	if len(passed) > 0 && passed[0].DecidedOver != "" {
		// Say what each pass was decided over: a pass means the clause was exercised and held.
		for _, res := range passed {
			text, st := p.label(StatusPassed)
			p.b.WriteString("  " + st.Render(text) + "  ")
			p.para(labelWidth, labelWidth+2, span{text: res.Check + " ", style: p.s.ID, raw: true}, span{text: "over " + res.DecidedOver, style: p.s.Dim})
		}
		return
	}
	if len(passed) > 0 {
		text, st := p.label(StatusPassed)
		p.b.WriteString("  " + st.Render(text) + "  ")
		var spans []span
		for i, res := range passed {
			id := res.Check
			if i < len(passed)-1 {
				id += ","
			}
			spans = append(spans, span{text: id, style: p.s.ID})
		}
		p.para(labelWidth, labelWidth, spans...)
		p.coverageNotes(passed)
	}
}

// result writes one non-passed result in full.
func (p *printer) result(res *Result) {
	text, st := p.label(res.Status)
	p.b.WriteString("  " + st.Render(text) + "  ")
	p.para(labelWidth, labelWidth+2, span{text: res.Check + " ", style: p.s.ID, raw: true}, span{text: res.Title})
	ind := strings.Repeat(" ", labelWidth)
	if len(res.Clauses) > 0 {
		p.b.WriteString(ind)
		p.para(labelWidth, labelWidth+2, span{text: "clauses:", style: p.s.Dim}, span{text: strings.Join(res.Clauses, ", "), style: p.s.ID})
	}
	if res.Status == StatusSkipped || res.Status == StatusNotApplicable {
		if res.Message != "" {
			p.b.WriteString(ind)
			p.para(labelWidth, labelWidth+2, span{text: "reason:", style: p.s.Dim}, span{text: res.Message})
		}
		return
	}
	if res.DecidedOver != "" && res.Status != StatusNotExercised {
		defer func() {
			p.b.WriteString(ind)
			p.para(labelWidth, labelWidth+2, span{text: "decided over:", style: p.s.Dim}, span{text: res.DecidedOver, style: p.s.Dim})
		}()
	}
	if res.Message != "" {
		p.b.WriteString(ind)
		p.para(labelWidth, labelWidth, span{text: res.Message})
	}
	if l := res.Location; l != nil && l.Path != "" {
		p.b.WriteString(ind)
		p.para(labelWidth, labelWidth+2, span{text: "at", style: p.s.Dim}, span{text: p.where(l), style: p.s.Location})
	}
	for i := range res.Evidence {
		p.evidence(&res.Evidence[i])
	}
	p.coverageResultNote(res)
	if res.Hint != "" && res.Status != StatusNotExercised {
		// A hint says how to fix a breach; a not-exercised check found none.
		p.b.WriteString(ind)
		p.para(labelWidth, labelWidth+6, span{text: "hint:", style: p.s.Dim}, span{text: res.Hint, style: p.s.Dim})
	}
}

// evidence writes one piece of evidence as a bullet with its context, scenario and steps.
func (p *printer) evidence(e *Evidence) {
	ind := strings.Repeat(" ", labelWidth)
	sub := labelWidth + 2
	p.b.WriteString(ind + "- ")
	p.para(sub, sub, span{text: e.Text})
	var spans []span
	if e.Location != nil && e.Location.Path != "" {
		spans = append(spans, span{text: "at", style: p.s.Dim}, span{text: p.where(e.Location), style: p.s.Location})
	}
	if e.Replica != "" {
		spans = append(spans, span{text: "replica", style: p.s.Dim}, span{text: e.Replica, style: p.s.Code})
	}
	if e.Callback != "" {
		spans = append(spans, span{text: "callback", style: p.s.Dim}, span{text: e.Callback, style: p.s.Code})
	}
	// A comma after each value but the last separates location, replica and callback.
	for i := 1; i < len(spans)-1; i += 2 {
		spans[i].text += ","
	}
	if len(spans) > 0 {
		p.b.WriteString(strings.Repeat(" ", sub))
		p.para(sub, sub+2, spans...)
	}
	if e.Scenario != "" {
		p.b.WriteString(strings.Repeat(" ", sub))
		p.para(sub, sub+2, span{text: "scenario", style: p.s.Dim}, span{text: e.Scenario, style: p.s.Code})
	}
	for i, st := range e.Steps {
		num := fmt.Sprintf("%d.", i+1)
		p.b.WriteString(strings.Repeat(" ", sub+2) + p.s.Dim.Render(num) + " ")
		col := sub + 2 + len(num) + 1
		p.para(col, col, span{text: st})
	}
}

// summary writes the table of counts per area and the verdict.
func (p *printer) summary(r *Report) {
	groups := groupByArea(r.Results)
	p.b.WriteByte('\n')
	p.line(p.s.Heading.Render("Summary"))
	cols := []string{"Checks", "Pass", "Fail", "Flaky", "Warn", "Skip", "N/A", "NotEx"}
	// The first numeric column is 7 wide ("Checks"), the others 6; the area column takes what they leave, and
	// below 16 columns the table becomes a list.
	colW := func(i int) int {
		if i == 0 {
			return 7
		}
		return 6
	}
	nameW := p.width - 2 - 7 - 6*(len(cols)-1)
	narrow := nameW < 16
	row := func(name string, nums []string, st lipgloss.Style) {
		if narrow {
			// Too narrow for a table: one wrapped line per area.
			var parts []string
			for i, n := range nums {
				parts = append(parts, cols[i]+" "+n)
			}
			p.b.WriteString("  ")
			p.para(2, 4, span{text: name + ":", style: st}, span{text: strings.Join(parts, ", "), style: st})
			return
		}
		name = truncate(name, nameW)
		var b strings.Builder
		b.WriteString("  " + name + strings.Repeat(" ", nameW-runewidth.StringWidth(name)))
		for i, n := range nums {
			b.WriteString(fmt.Sprintf("%*s", colW(i), n))
		}
		p.line(st.Render(b.String()))
	}
	if !narrow {
		row("Area", cols, p.s.Dim)
	}
	var all []Result
	for _, g := range groups {
		var rs []Result
		for _, res := range g.results {
			rs = append(rs, *res)
		}
		all = append(all, rs...)
		row(g.name, counts(summaryOf(&Report{Results: rs})), lipgloss.Style{})
	}
	total := summaryOf(&Report{Results: all})
	row("Total", counts(total), p.s.Heading)
	p.b.WriteByte('\n')
	var verdict span
	var details []string
	switch {
	case total.Total == 0:
		verdict = span{text: "NO CHECKS RAN:", style: p.s.Warn}
	case total.Failed > 0 || total.Flaky > 0:
		verdict = span{text: "FAILED:", style: p.s.Fail}
	case total.NotExercised > 0:
		// Never PASSED while a check the provider implements went unexercised: the kit could not decide.
		verdict = span{text: "NOT DECIDED:", style: p.s.Warn}
	default:
		verdict = span{text: "PASSED:", style: p.s.Pass}
	}
	add := func(n int, one, many string) {
		if n == 1 {
			details = append(details, "1 "+one)
		} else if n > 1 {
			details = append(details, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(total.Failed, "check failed", "checks failed")
	add(total.Flaky, "check flaky", "checks flaky")
	add(total.NotExercised, "not exercised", "not exercised")
	add(total.Warning, "warning", "warnings")
	add(total.Skipped, "skipped", "skipped")
	add(total.NotApplicable, "not applicable", "not applicable")
	add(total.Passed, "passed", "passed")
	p.para(0, 2, verdict, span{text: strings.Join(details, ", ")})
}

// counts formats a summary as the table's numeric columns.
func counts(s Summary) []string {
	return []string{fmt.Sprint(s.Total), fmt.Sprint(s.Passed), fmt.Sprint(s.Failed), fmt.Sprint(s.Flaky), fmt.Sprint(s.Warning), fmt.Sprint(s.Skipped),
		fmt.Sprint(s.NotApplicable), fmt.Sprint(s.NotExercised)}
}

// truncate shortens s to at most max columns, marking the cut with "...".
func truncate(s string, max int) string {
	s = strings.ReplaceAll(sanitize(s), "\n", " ")
	if runewidth.StringWidth(s) <= max {
		return s
	}
	return runewidth.Truncate(s, max, "...")
}
