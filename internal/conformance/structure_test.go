package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/clauses"
)

// specClauses maps the clause IDs of spec/clauses.md (the copy embedded in internal/clauses) to their owners.
func specClauses(t *testing.T) map[string]clauses.Owner {
	t.Helper()
	owners := map[string]clauses.Owner{}
	for _, c := range clauses.All() {
		owners[c.ID] = c.Owner
	}
	if len(owners) < 50 {
		t.Fatalf("read only %d clause IDs from clauses.md; the table format changed?", len(owners))
	}
	return owners
}

// TestEveryNamedClauseExists fails on a check that names a clause ID clauses.md does not have, or names none.
func TestEveryNamedClauseExists(t *testing.T) {
	owners := specClauses(t)
	for _, c := range Checks() {
		if c.Kind == KindKitRule {
			// The kit's own rule: no platform clause, and an ID that says so.
			if len(c.Clauses) != 0 || !strings.HasPrefix(c.ID, KitRulePrefix) {
				t.Errorf("kit rule %s must name no clause and start with %s", c.ID, KitRulePrefix)
			}
			continue
		}
		if len(c.Clauses) == 0 || strings.HasPrefix(c.ID, KitRulePrefix) {
			t.Errorf("check %s names no clause, or has a kit rule's ID without being one", c.ID)
		}
		for _, id := range c.Clauses {
			if _, ok := owners[id]; !ok {
				t.Errorf("check %s names clause %s, which spec/clauses.md does not have", c.ID, id)
			}
		}
	}
}

// noBrokenFixture lists the checks that have no fixture under testdata/providers/broken/, each with why.
var noBrokenFixture = map[string]string{}

// TestEveryCheckHasABrokenFixture fails on a check that no broken fixture's expect.json names in `fails`,
// unless noBrokenFixture says why; and on a stale entry of noBrokenFixture.
func TestEveryCheckHasABrokenFixture(t *testing.T) {
	proven := map[string][]string{}
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "providers", "broken", "*", "expect.json"))
	if len(dirs) == 0 {
		t.Fatal("no broken fixture found")
	}
	for _, p := range dirs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Fails []string `json:"fails"`
		}
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, id := range e.Fails {
			proven[id] = append(proven[id], filepath.Base(filepath.Dir(p)))
		}
	}
	known := map[string]bool{}
	for _, c := range Checks() {
		known[c.ID] = true
		_, exempt := noBrokenFixture[c.ID]
		switch {
		case len(proven[c.ID]) == 0 && !exempt:
			t.Errorf("check %s: no fixture under testdata/providers/broken/ names it in expect.json's fails; add one (or say why in noBrokenFixture)", c.ID)
		case len(proven[c.ID]) > 0 && exempt:
			t.Errorf("check %s is in noBrokenFixture but %v prove it; drop the entry", c.ID, proven[c.ID])
		}
	}
	var unknown []string
	for id := range proven {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	sort.Strings(unknown)
	for _, id := range unknown {
		t.Errorf("broken fixtures %v expect check %s, which does not exist", proven[id], id)
	}
	for id, why := range noBrokenFixture {
		if !known[id] {
			t.Errorf("noBrokenFixture names %s, which is not a check", id)
		}
		if why == "" {
			t.Errorf("noBrokenFixture[%s] gives no reason", id)
		}
	}
}
