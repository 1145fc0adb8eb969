package clauses

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ParseError is a malformed clause list: the file, the 1-based line and what is wrong there.
type ParseError struct {
	File string
	Line int
	Msg  string
}

// Error names the file and line, then what is wrong and what to write instead.
func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// idPattern is a clause ID: upper-case words joined by hyphens, at least two of them (EP-GROUP, SYNC-CAS).
var idPattern = regexp.MustCompile(`^[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+$`)

// delimiterCell is one cell of a Markdown table's delimiter row (---, :--, --:).
var delimiterCell = regexp.MustCompile(`^:?-+:?$`)

// header is the header row every clause table starts with, cell by cell (compared case-insensitively).
var header = []string{"id", "owner", "clause"}

// Parse reads a clause list written as spec/clauses.md is: prose, `## Section` headings, and under them
// Markdown tables with the header `| ID | owner | clause |` whose rows are clauses. Prose is ignored; a table
// row that is not a well-formed clause is an error naming file and line. name is the file name errors use.
func Parse(name string, data []byte) ([]Clause, error) {
	p := parser{name: name, seen: map[string]int{}}
	lines := strings.Split(string(data), "\n")
	for i, ln := range lines {
		if err := p.line(i+1, strings.TrimSuffix(ln, "\r")); err != nil {
			return nil, err
		}
	}
	if p.state == wantDelimiter {
		return nil, p.errAt(len(lines), "the clause table's header row has no delimiter row (| --- | --- | --- |) after it")
	}
	if len(p.out) == 0 {
		return nil, p.errAt(len(lines), "no clause found: clauses are rows of a table with the header | ID | owner | clause |")
	}
	return p.out, nil
}

// tableState is where the parser is relative to a clause table.
type tableState int

const (
	outside       tableState = iota // in prose
	wantDelimiter                   // after a header row
	inRows                          // after the delimiter row
)

type parser struct {
	name    string
	section string
	state   tableState
	seen    map[string]int // clause ID -> line of its row
	out     []Clause
}

func (p *parser) errAt(line int, format string, args ...any) error {
	return &ParseError{File: p.name, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) line(n int, ln string) error {
	if !utf8.ValidString(ln) {
		return p.errAt(n, "the line is not valid UTF-8; write the clause list as UTF-8 text")
	}
	trimmed := strings.TrimSpace(ln)
	if !strings.HasPrefix(trimmed, "|") {
		if p.state == wantDelimiter {
			return p.errAt(n, "the clause table's header row has no delimiter row (| --- | --- | --- |) after it")
		}
		p.state = outside
		if rest, ok := strings.CutPrefix(trimmed+" ", "## "); ok {
			p.section = strings.TrimSpace(rest)
			if p.section == "" {
				return p.errAt(n, "a section heading with no name; write `## Name`")
			}
		}
		return nil
	}
	cells, err := splitRow(trimmed)
	if err != nil {
		return p.errAt(n, "%s", err)
	}
	switch p.state {
	case outside:
		if !isHeader(cells) {
			return p.errAt(n, "a table row outside a clause table: a clause table starts with the header | ID | owner | clause |")
		}
		if p.section == "" {
			return p.errAt(n, "a clause table before any section heading; put it under a `## Section` heading")
		}
		p.state = wantDelimiter
	case wantDelimiter:
		if len(cells) != len(header) || !allDelimiters(cells) {
			return p.errAt(n, "the clause table's header row has no delimiter row (| --- | --- | --- |) after it")
		}
		p.state = inRows
	case inRows:
		c, err := p.clause(n, cells)
		if err != nil {
			return err
		}
		p.seen[c.ID] = n
		p.out = append(p.out, c)
	}
	return nil
}

// clause checks one row of a clause table.
func (p *parser) clause(n int, cells []string) (Clause, error) {
	if len(cells) != 3 {
		return Clause{}, p.errAt(n, "a clause row has %d cells, want 3: | ID | owner | clause |", len(cells))
	}
	id, owner, text := cells[0], Owner(cells[1]), cells[2]
	if !idPattern.MatchString(id) {
		return Clause{}, p.errAt(n, "clause ID %q is not upper-case words joined by hyphens, such as PLAN-NO-IO", id)
	}
	if first, dup := p.seen[id]; dup {
		return Clause{}, p.errAt(n, "clause ID %s is already used on line %d; clause IDs are unique and never reused", id, first)
	}
	if owner != OwnerProvider && owner != OwnerPlatform {
		return Clause{}, p.errAt(n, "clause %s has owner %q; the owner is %s or %s", id, owner, OwnerProvider, OwnerPlatform)
	}
	if text == "" {
		return Clause{}, p.errAt(n, "clause %s has no text; write the normative sentence in the third cell", id)
	}
	return Clause{ID: id, Owner: owner, Section: p.section, Text: text, Line: n}, nil
}

// splitRow splits a table row (already trimmed, starting with |) into its trimmed cells. A pipe written as
// \| belongs to the cell.
func splitRow(row string) ([]string, error) {
	if len(row) < 2 || !strings.HasSuffix(row, "|") || strings.HasSuffix(row, `\|`) {
		return nil, fmt.Errorf("a table row does not end with |")
	}
	inner := row[1 : len(row)-1]
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(inner); i++ {
		switch {
		case inner[i] == '\\' && i+1 < len(inner) && inner[i+1] == '|':
			cell.WriteByte('|')
			i++
		case inner[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(inner[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String())), nil
}

func isHeader(cells []string) bool {
	if len(cells) != len(header) {
		return false
	}
	for i, c := range cells {
		if !strings.EqualFold(c, header[i]) {
			return false
		}
	}
	return true
}

func allDelimiters(cells []string) bool {
	for _, c := range cells {
		if !delimiterCell.MatchString(c) {
			return false
		}
	}
	return true
}
