package report

import (
	"fmt"
	"strings"
)

// Tally is what a check was decided over, as counts: Calls of Noun ("prepare_turn calls") in Scenarios
// scenarios, with labelled sub-counts in the order they were first seen ("2 refreshes"). It travels in the
// report beside DecidedOver, which is its Sentence, so that Merge adds the shards' counts and renders the
// sentence once from the sum.
type Tally struct {
	Noun      string  `json:"noun"`
	Calls     int     `json:"calls"`
	Scenarios int     `json:"scenarios"`
	Counts    []Count `json:"counts,omitempty"`
}

// Count is one labelled sub-count of a Tally.
type Count struct {
	Label string `json:"label"`
	N     int    `json:"n"`
}

// Sentence renders the tally: "14 prepare_turn calls in 3 scenarios: 2 refreshes, 3 retries".
func (t *Tally) Sentence() string {
	s := fmt.Sprintf("%d %s in %s", t.Calls, t.Noun, plural(t.Scenarios, "scenario"))
	var parts []string
	for _, c := range t.Counts {
		parts = append(parts, fmt.Sprintf("%d %s", c.N, c.Label))
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// Plus returns the sum of two tallies of one noun: calls, scenarios and each label's count added, labels in
// the order t then u first saw them. Neither input is modified.
func (t *Tally) Plus(u *Tally) *Tally {
	out := &Tally{Noun: t.Noun, Calls: t.Calls + u.Calls, Scenarios: t.Scenarios + u.Scenarios}
	at := map[string]int{}
	for _, cs := range [][]Count{t.Counts, u.Counts} {
		for _, c := range cs {
			if i, ok := at[c.Label]; ok {
				out.Counts[i].N += c.N
				continue
			}
			at[c.Label] = len(out.Counts)
			out.Counts = append(out.Counts, c)
		}
	}
	return out
}
