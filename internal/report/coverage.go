package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/coverage"
)

// Coverage is what a run reached of the provider's own code (see internal/coverage and the Coverage section
// of docs/report-format.md).
type Coverage = coverage.Profile

// mergeCoverage merges the coverage of shards (nil when none has any).
func mergeCoverage(reports []*Report) *Coverage {
	ps := make([]*coverage.Profile, 0, len(reports))
	for _, r := range reports {
		ps = append(ps, r.Coverage)
	}
	return coverage.Merge(ps...)
}

// percent formats n of total as "87%" ("-" when there is nothing to count).
func percent(n, total int) string {
	if total == 0 {
		return "-"
	}
	return strconv.Itoa(n*100/total) + "%"
}

// lineList formats ranges as "118-131, 140".
func rangeText(rs []coverage.Range) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		s := strconv.Itoa(r.First)
		if r.Last != r.First {
			s += "-" + strconv.Itoa(r.Last)
		}
		out = append(out, s)
	}
	return out
}

// untakenLines lists the lines of untaken branch directions, each once.
func untakenLines(bs []coverage.BranchDirection) []int {
	seen := map[int]bool{}
	var out []int
	for _, b := range bs {
		if !seen[b.Line] {
			seen[b.Line] = true
			out = append(out, b.Line)
		}
	}
	sort.Ints(out)
	return out
}

// coverageNote is the note shown next to a check's verdict when a callback it judges has branch directions
// no scenario took ("" when none has).
func coverageNote(c *Coverage, check string) string {
	if c == nil || !c.BranchesMeasured {
		return ""
	}
	var parts []string
	for _, name := range c.CallbacksOf(check) {
		cb := c.Callback(name)
		if cb == nil || len(cb.UntakenBranches) == 0 {
			continue
		}
		var lines []string
		for _, l := range untakenLines(cb.UntakenBranches) {
			lines = append(lines, strconv.Itoa(l))
		}
		parts = append(parts, fmt.Sprintf("%s has %s no scenario took (%s %s)", name,
			plural(len(cb.UntakenBranches), "branch direction"), map[bool]string{true: "line", false: "lines"}[len(lines) == 1],
			strings.Join(lines, ", ")))
	}
	return strings.Join(parts, "; ")
}

// plural is "1 line" or "3 lines".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// coverageNotes writes, under a line of passed checks, the notes of those that judge callbacks with untaken
// branches (naming the checks when a note is not about all of them).
func (p *printer) coverageNotes(results []*Result) {
	byNote := map[string][]string{}
	var notes []string
	for _, res := range results {
		n := coverageNote(p.cov, res.Check)
		if n == "" {
			continue
		}
		if byNote[n] == nil {
			notes = append(notes, n)
		}
		byNote[n] = append(byNote[n], res.Check)
	}
	ind := strings.Repeat(" ", labelWidth)
	for _, n := range notes {
		p.b.WriteString(ind)
		p.para(labelWidth, labelWidth+2, span{text: "coverage:", style: p.s.Dim},
			span{text: notePrefix(byNote[n], len(results)) + n, style: p.s.Dim})
	}
}

func notePrefix(checks []string, of int) string {
	if len(checks) == of {
		return ""
	}
	return strings.Join(checks, ", ") + ": "
}

// coverageResultNote writes the coverage note of one fully shown result.
func (p *printer) coverageResultNote(res *Result) {
	if n := coverageNote(p.cov, res.Check); n != "" {
		p.b.WriteString(strings.Repeat(" ", labelWidth))
		p.para(labelWidth, labelWidth+2, span{text: "coverage:", style: p.s.Dim}, span{text: n, style: p.s.Dim})
	}
}

// coverage writes the provider's coverage: totals, by file, by callback, and what never ran inside each
// implemented callback.
func (p *printer) coverage(c *Coverage) {
	if c == nil {
		return
	}
	p.b.WriteByte('\n')
	if c.Mode == coverage.ModeOff {
		p.para(0, 2, span{text: "Provider coverage", style: p.s.Heading}, span{text: strings.Join(c.Notes, "; "), style: p.s.Dim})
		return
	}
	t := c.Totals()
	head := fmt.Sprintf("%d of %d lines (%s)", t.Reached, t.Lines, percent(t.Reached, t.Lines))
	if c.BranchesMeasured {
		head += fmt.Sprintf(", %d of %d branch directions (%s)", t.BranchesTaken, t.Branches, percent(t.BranchesTaken, t.Branches))
	} else {
		head += ", branches not measured (Python 3.12+ measures them)"
	}
	p.para(0, 2, span{text: "Provider coverage", style: p.s.Heading}, span{text: head, style: p.s.Dim})
	for i := range c.Files {
		f := &c.Files[i]
		ft := f.Totals()
		text := fmt.Sprintf("%s %d/%d lines", p.rel(f.Path), ft.Reached, ft.Lines)
		if c.BranchesMeasured && ft.Branches > 0 {
			text += fmt.Sprintf(", %d/%d branches", ft.BranchesTaken, ft.Branches)
		}
		if f.Error != "" {
			text += " (" + f.Error + ")"
		}
		p.b.WriteString("  ")
		p.para(2, 4, span{text: text})
	}
	for i := range c.Callbacks {
		p.coverageCallback(c, &c.Callbacks[i])
	}
	for _, n := range c.Notes {
		p.b.WriteString("  ")
		p.para(2, 4, span{text: "note:", style: p.s.Dim}, span{text: n, style: p.s.Dim})
	}
}

func (p *printer) coverageCallback(c *Coverage, cb *coverage.Callback) {
	lines, dirs := 0, 0
	for _, r := range cb.Files {
		lines += len(r.Lines)
		dirs += len(r.Branches)
	}
	text := "ran " + plural(lines, "line")
	if c.BranchesMeasured {
		text += ", " + plural(dirs, "branch direction")
	}
	if im := cb.Implementation; im != nil {
		text += fmt.Sprintf("; %s at %s:%d: %d/%d lines", im.Function, p.rel(im.Path), im.First, im.Reached, im.Lines)
	}
	p.b.WriteString("  ")
	p.para(2, 4, span{text: cb.Name + ":", style: p.s.ID}, span{text: text})
	if len(cb.Unreached) > 0 {
		var parts []string
		for i, r := range cb.Unreached {
			s := rangeText(cb.Unreached[i : i+1])[0]
			if r.After != "" {
				s += " (after `" + r.After + "`, line " + strconv.Itoa(r.AfterLine) + ")"
			}
			parts = append(parts, s)
		}
		word := "lines"
		if len(cb.Unreached) == 1 && cb.Unreached[0].First == cb.Unreached[0].Last {
			word = "line"
		}
		p.b.WriteString("    ")
		p.para(4, 6, span{text: cb.Name + ": " + word + " " + strings.Join(parts, ", ") + " never ran", style: p.s.Warn})
	}
	if c.BranchesMeasured && len(cb.UntakenBranches) > 0 {
		var ls []string
		for _, l := range untakenLines(cb.UntakenBranches) {
			ls = append(ls, strconv.Itoa(l))
		}
		p.b.WriteString("    ")
		p.para(4, 6, span{text: fmt.Sprintf("%s: %s never taken (%s %s)", cb.Name, plural(len(cb.UntakenBranches), "branch direction"),
			map[bool]string{true: "line", false: "lines"}[len(ls) == 1], strings.Join(ls, ", ")), style: p.s.Dim})
	}
}

// rel is path relative to the project, as the report shows locations.
func (p *printer) rel(path string) string {
	if r, ok := relPath(p.root, path); ok {
		return r
	}
	return path
}
