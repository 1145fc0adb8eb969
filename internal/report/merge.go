package report

import (
	"fmt"
	"slices"
	"strings"
)

// Merge combines the reports of shards of one run (the same provider and seed) into one. Results of the same
// check merge into one with the worst decided status (failed > flaky > warning > passed > not_exercised >
// not_applicable > skipped): a check one shard exercised and passed is passed even when another shard's
// scenarios did not reach it, and not_exercised only when no shard reached it. Its message, hint and
// location come from that shard, its evidence is the concatenation of every shard's, in shard order, and its
// decided_over is rendered once every shard is merged: from the sum of the shards' tallies when they counted
// calls (decided_over_counts), and otherwise by joining the shards' distinct sentences.
// Checks keep the order in which they first appear; scenarios are the union in first-seen order; the summary
// is recomputed. Reports of different providers (name, entry point or target) or different seeds, and reports
// with another schema, are an error. The inputs are not modified.
func Merge(reports ...*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("merge reports: no report given")
	}
	for i, r := range reports {
		if r == nil {
			return nil, fmt.Errorf("merge reports: report %d is missing", i+1)
		}
		if r.Schema != "" && r.Schema != Schema {
			return nil, fmt.Errorf("merge reports: report %d has schema %q, expected %q", i+1, r.Schema, Schema)
		}
	}
	first := reports[0]
	out := &Report{Schema: Schema, Tool: first.Tool, Provider: first.Provider, Seed: first.Seed}
	index := map[string]int{}
	overs := map[int]*overSum{}
	seenScenario := map[string]bool{}
	for i, r := range reports {
		if i > 0 {
			p, q := first.Provider, r.Provider
			if p.Name != q.Name || p.EntryPoint != q.EntryPoint || p.Target != q.Target {
				return nil, fmt.Errorf("merge reports: report %d is for provider %q (%s), report 1 for %q (%s): merge only shards of one run",
					i+1, q.Name, q.EntryPoint, p.Name, p.EntryPoint)
			}
			if r.Seed != first.Seed {
				return nil, fmt.Errorf("merge reports: report %d has seed %d, report 1 has seed %d: merge only shards of one run", i+1, r.Seed, first.Seed)
			}
		}
		for _, sc := range r.Scenarios {
			if !seenScenario[sc] {
				seenScenario[sc] = true
				out.Scenarios = append(out.Scenarios, sc)
			}
		}
		for _, res := range r.Results {
			j, ok := index[res.Check]
			if !ok {
				index[res.Check] = len(out.Results)
				overs[len(out.Results)] = new(overSum).add(res)
				c := res
				c.Clauses = append([]string(nil), res.Clauses...)
				c.Evidence = append([]Evidence(nil), res.Evidence...)
				out.Results = append(out.Results, c)
				continue
			}
			overs[j].add(res)
			m := &out.Results[j]
			evidence := append(m.Evidence, res.Evidence...)
			if mergeRank(res.Status) > mergeRank(m.Status) {
				keep := *m
				*m = res
				m.Clauses = append([]string(nil), res.Clauses...)
				if m.Location == nil {
					m.Location = keep.Location
				}
				if m.Hint == "" {
					m.Hint = keep.Hint
				}
				if m.Help == "" {
					m.Help = keep.Help
				}
			}
			m.Evidence = evidence
		}
	}
	for j := range out.Results {
		out.Results[j].DecidedOver, out.Results[j].Tally = overs[j].render()
	}
	out.Coverage = mergeCoverage(reports)
	out.Summarize()
	return out, nil
}

// mergeRank orders statuses for merging shards: a decision beats the absence of one.
func mergeRank(s Status) int {
	switch s {
	case StatusFailed:
		return 7
	case StatusFlaky:
		return 6
	case StatusWarning:
		return 5
	case StatusPassed:
		return 4
	case StatusNotExercised:
		return 3
	case StatusNotApplicable:
		return 2
	case StatusSkipped:
		return 1
	}
	return 0
}

// overSum gathers what the shards' results of one check were decided over: the sum of their tallies and,
// for sentences that are not counts, each distinct sentence once, in shard order.
type overSum struct {
	tally     *Tally
	sentences []string
}

// add takes one shard's result.
func (o *overSum) add(r Result) *overSum {
	switch {
	case r.Tally != nil && (o.tally == nil || o.tally.Noun == r.Tally.Noun):
		if o.tally == nil {
			o.tally = &Tally{Noun: r.Tally.Noun}
		}
		o.tally = o.tally.Plus(r.Tally)
	case r.DecidedOver != "" && !slices.Contains(o.sentences, r.DecidedOver):
		o.sentences = append(o.sentences, r.DecidedOver)
	}
	return o
}

// render is the merged decided-over sentence, and the tally it was rendered from when every shard counted.
func (o *overSum) render() (string, *Tally) {
	if o.tally != nil && len(o.sentences) == 0 {
		return o.tally.Sentence(), o.tally
	}
	parts := o.sentences
	if o.tally != nil {
		parts = append([]string{o.tally.Sentence()}, parts...)
	}
	return strings.Join(parts, "; "), nil
}
