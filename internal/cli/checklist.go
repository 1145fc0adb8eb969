package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// minStackedWidth is the narrowest title column of the table layout; below it each check is a block of its
// own lines.
const minStackedWidth = 24

// minTitleWidth is the narrowest the title column of `conformance list` gets before the clauses move under
// the title instead of into their own column.
const minTitleWidth = 30

// writeCheckList prints the checks as a table fitted to width: ID, SEVERITY, AREA, CLAUSES and TITLE, the
// title wrapped in its column. When the clauses column does not fit, the clauses go on a line of their own
// under the title.
func writeCheckList(w io.Writer, s term.Styles, checks []*conformance.Check, width int) {
	if width <= 0 {
		width = term.DefaultWidth
	}
	idW, areaW, clauseW := len("ID"), len("AREA"), len("CLAUSES")
	for _, c := range checks {
		idW, areaW = max(idW, len(c.ID)), max(areaW, len(c.Area))
		for _, cl := range c.ClauseLabels() {
			clauseW = max(clauseW, len(cl))
		}
	}
	const sevW, gap = len("SEVERITY"), 2
	fixed := idW + sevW + areaW + 3*gap
	columns := width-fixed-clauseW-gap >= minTitleWidth
	titleW := width - fixed
	if columns {
		titleW -= clauseW + gap
	}
	if titleW < minStackedWidth {
		writeStackedCheckList(w, s, checks, width)
		return
	}
	pad := func(text string, n int) string { return text + strings.Repeat(" ", max(0, n-ansi.StringWidth(text))) }
	head := pad("ID", idW+gap) + pad("SEVERITY", sevW+gap) + pad("AREA", areaW+gap)
	if columns {
		head += pad("CLAUSES", clauseW+gap)
	}
	fmt.Fprintln(w, s.Dim.Render(strings.TrimRight(head+"TITLE", " ")))
	indent := strings.Repeat(" ", fixed)
	for _, c := range checks {
		title := strings.Split(wrapWords(c.Title, titleW), "\n")
		var clauses []string
		if columns {
			clauses = c.ClauseLabels()
		} else {
			title = append(title, strings.Split(wrapWords("clauses: "+strings.Join(c.ClauseLabels(), ", "), titleW), "\n")...)
		}
		for i := 0; i < max(len(title), len(clauses)); i++ {
			var line string
			if i == 0 {
				line = pad(s.ID.Render(c.ID), idW+gap) + pad(string(c.Severity), sevW+gap) + pad(c.Area, areaW+gap)
			} else {
				line = indent
			}
			if columns {
				cl := ""
				if i < len(clauses) {
					cl = clauses[i]
				}
				line += pad(cl, clauseW+gap)
			}
			if i < len(title) {
				line += title[i]
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
}

// writeStackedCheckList prints each check as "ID  SEVERITY  AREA", then its title and clauses indented and
// wrapped, for terminals too narrow for the table.
func writeStackedCheckList(w io.Writer, s term.Styles, checks []*conformance.Check, width int) {
	const indent = "    "
	wrap := func(text string) string {
		return indent + strings.ReplaceAll(wrapWords(text, max(width-len(indent), 10)), "\n", "\n"+indent)
	}
	for _, c := range checks {
		fmt.Fprintf(w, "%s  %s  %s\n", s.ID.Render(c.ID), c.Severity, c.Area)
		fmt.Fprintln(w, wrap(c.Title))
		fmt.Fprintln(w, wrap("clauses: "+strings.Join(c.ClauseLabels(), ", ")))
	}
}
