package clauses

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// TestEmbeddedSpecParsesEveryRow: every line of the embedded copy that looks like a clause row (| ID | owner |)
// becomes a clause, in order, with the owner the row gives and its text; nothing else becomes one.
func TestEmbeddedSpecParsesEveryRow(t *testing.T) {
	row := regexp.MustCompile(`^\| ([^|]+) \| ([^|]+) \| (.*) \|$`)
	var want []Clause
	for i, ln := range strings.Split(string(Source()), "\n") {
		if m := row.FindStringSubmatch(ln); m != nil && m[1] != "ID" && m[1] != "---" {
			want = append(want, Clause{ID: m[1], Owner: Owner(m[2]), Text: m[3], Line: i + 1})
		}
	}
	got := All()
	if len(want) < 60 || len(got) != len(want) {
		t.Fatalf("parsed %d clauses, the file has %d clause rows", len(got), len(want))
	}
	owners := map[Owner]int{}
	for i, c := range got {
		w := want[i]
		if c.ID != w.ID || c.Owner != w.Owner || c.Text != w.Text || c.Line != w.Line {
			t.Errorf("clause %d: got %+v, the file has %+v", i, c, w)
		}
		if c.Section == "" {
			t.Errorf("clause %s has no section", c.ID)
		}
		owners[c.Owner]++
	}
	if owners[OwnerProvider] == 0 || owners[OwnerPlatform] == 0 || len(owners) != 2 {
		t.Errorf("owners %v: want both provider and platform clauses and nothing else", owners)
	}
}

// TestKnownClauses pins a few clauses by hand, so that a parser that reads the right rows wrongly fails.
func TestKnownClauses(t *testing.T) {
	for _, tc := range []struct {
		id      string
		owner   Owner
		section string
		prefix  string
	}{
		{"EP-GROUP", OwnerProvider, "Discovery", "The provider is declared in the entry-point group `astrabox.providers.runtime_preparation`"},
		{"EP-CONFLICT", OwnerPlatform, "Discovery", "More than one provider fails startup."},
		{"SYNC-CAS", OwnerPlatform, "Synchronize and recover", "The host checks version, refresh revision"},
		{"LEAK-CROSS-SESSION", OwnerProvider, "Everywhere", "One principal's material never reaches another principal's Session."},
	} {
		c, ok := Lookup(tc.id)
		if !ok {
			t.Errorf("%s: not found", tc.id)
			continue
		}
		if c.Owner != tc.owner || c.Section != tc.section || !strings.HasPrefix(c.Text, tc.prefix) {
			t.Errorf("%s: got %+v", tc.id, c)
		}
	}
	if _, ok := Lookup("PLAN-STABEL"); ok {
		t.Error("Lookup found a clause that does not exist")
	}
	if c, _ := Lookup("PLAN-SYNC"); c.Plain() != "plan is synchronous." {
		t.Errorf("Plain: %q", c.Plain())
	}
}

const good = "# Title\n\nprose | with a pipe\n\n## Plan\n| ID | owner | clause |\n| --- | --- | --- |\n" +
	"| PLAN-A | provider | `plan` is fast. |\n| PLAN-B | platform | a \\| b |\n\nmore prose\n\n## Turn\n" +
	"| id | Owner | Clause |\n|:--|--:|---|\n| TURN-A | provider | refresh. |\n"

func TestParseSmallList(t *testing.T) {
	got, err := Parse("x.md", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := []Clause{
		{"PLAN-A", OwnerProvider, "Plan", "`plan` is fast.", 8},
		{"PLAN-B", OwnerPlatform, "Plan", "a | b", 9},
		{"TURN-A", OwnerProvider, "Turn", "refresh.", 16},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("clause %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	crlf := bytes.ReplaceAll([]byte(good), []byte("\n"), []byte("\r\n"))
	if got2, err := Parse("x.md", crlf); err != nil || len(got2) != 3 || got2[2] != want[2] {
		t.Errorf("CRLF: %+v %v", got2, err)
	}
}

// TestParseErrorsNameTheLine: each malformed list fails with a ParseError at the line that is wrong, saying
// what is wrong.
func TestParseErrorsNameTheLine(t *testing.T) {
	head := "## S\n| ID | owner | clause |\n| --- | --- | --- |\n"
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"bad owner", head + "| A-B | vendor | text |\n", 4, `owner "vendor"`},
		{"bad id", head + "| a-b | provider | text |\n", 4, `clause ID "a-b"`},
		{"one-word id", head + "| PLAN | provider | text |\n", 4, `clause ID "PLAN"`},
		{"duplicate", head + "| A-B | provider | x |\n| A-B | platform | y |\n", 5, "already used on line 4"},
		{"no text", head + "| A-B | provider |  |\n", 4, "has no text"},
		{"two cells", head + "| A-B | provider |\n", 4, "2 cells, want 3"},
		{"four cells", head + "| A-B | provider | x | y |\n", 4, "4 cells, want 3"},
		{"no closing pipe", head + "| A-B | provider | x\n", 4, "does not end with |"},
		{"escaped closing pipe", head + "| A-B | provider | x \\|\n", 4, "does not end with |"},
		{"no delimiter", "## S\n| ID | owner | clause |\n| A-B | provider | x |\n", 3, "no delimiter row"},
		{"header at end", "## S\n| ID | owner | clause |", 2, "no delimiter row"},
		{"header then prose", "## S\n| ID | owner | clause |\nprose\n", 3, "no delimiter row"},
		{"stray table", "## S\n| a | b |\n| --- | --- |\n", 2, "outside a clause table"},
		{"no section", "| ID | owner | clause |\n| --- | --- | --- |\n| A-B | provider | x |\n", 1, "before any section heading"},
		{"empty heading", "## \n", 1, "section heading with no name"},
		{"not utf-8", head + "| A-B | provider | \xff |\n", 4, "not valid UTF-8"},
		{"empty", "", 1, "no clause found"},
		{"prose only", "# T\n\nsome text\n", 4, "no clause found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("spec.md", []byte(tc.in))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a ParseError", err)
			}
			if pe.File != "spec.md" || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.msg) {
				t.Errorf("got %s:%d: %s; want line %d with %q", pe.File, pe.Line, pe.Msg, tc.line, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "spec.md:") {
				t.Errorf("error %q does not start with the file and line", err)
			}
		})
	}
}

// TestSourceIsACopy: changing what Source returns does not change the embedded clauses.
func TestSourceIsACopy(t *testing.T) {
	s := Source()
	for i := range s {
		s[i] = 'x'
	}
	if _, ok := Lookup("EP-GROUP"); !ok || !bytes.Contains(Source(), []byte("EP-GROUP")) {
		t.Error("the embedded source changed through a copy")
	}
}
