package clauses

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: any input either parses into well-formed clauses (IDs valid and unique, owner typed, text and
// section present, lines in range) that survive being written back as a table and parsed again, or fails with
// a ParseError naming a line of the input. Never a panic.
func FuzzParse(f *testing.F) {
	f.Add(Source())
	f.Add([]byte(good))
	f.Add([]byte("## S\n| ID | owner | clause |\n| --- | --- | --- |\n| A-B | vendor | x |\n"))
	f.Add([]byte("## S\n| ID | owner | clause |\n|---|---|---|\n| A-B | provider | a \\\\| b \\| c |\n"))
	f.Add([]byte("##\n|\n| ID | owner | clause |\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := Parse("fuzz.md", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a ParseError", err)
			}
			if lines := strings.Count(string(data), "\n") + 1; pe.Line < 1 || pe.Line > lines || pe.Msg == "" {
				t.Fatalf("error at line %d of %d: %q", pe.Line, lines, pe.Msg)
			}
			return
		}
		if len(cs) == 0 {
			t.Fatal("no error and no clause")
		}
		seen := map[string]bool{}
		for _, c := range cs {
			if !idPattern.MatchString(c.ID) || seen[c.ID] || (c.Owner != OwnerProvider && c.Owner != OwnerPlatform) ||
				c.Text == "" || c.Section == "" || c.Line < 1 {
				t.Fatalf("malformed clause %+v", c)
			}
			seen[c.ID] = true
		}
		again, err := Parse("again.md", []byte(render(cs)))
		if err != nil {
			t.Fatalf("the parsed clauses written back do not parse: %v\n%s", err, render(cs))
		}
		if len(again) != len(cs) {
			t.Fatalf("%d clauses written back parse as %d", len(cs), len(again))
		}
		for i := range cs {
			a, b := cs[i], again[i]
			if a.ID != b.ID || a.Owner != b.Owner || a.Section != b.Section || a.Text != b.Text {
				t.Fatalf("clause %d: %+v written back parses as %+v", i, a, b)
			}
		}
	})
}

// render writes clauses as a clause list, one table per run of clauses of the same section.
func render(cs []Clause) string {
	var b strings.Builder
	section := ""
	for i, c := range cs {
		if i == 0 || c.Section != section {
			section = c.Section
			b.WriteString("\n## " + section + "\n| ID | owner | clause |\n| --- | --- | --- |\n")
		}
		b.WriteString("| " + c.ID + " | " + string(c.Owner) + " | " + strings.ReplaceAll(c.Text, "|", `\|`) + " |\n")
	}
	return b.String()
}
