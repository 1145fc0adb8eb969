package report

import (
	"fmt"
	"strings"
)

// Merge combines the reports of shards of one run (the same provider and seed) into one. Results of the same
// check merge into one with the worst decided status (failed > flaky > warning > passed > not_exercised >
// not_applicable > skipped): a check one shard exercised and passed is passed even when another shard's
// scenarios did not reach it, and not_exercised only when no shard reached it. Its message, hint and
// location come from that shard, its evidence is the concatenation of every shard's, in shard order, and its
// decided_over joins every shard's distinct sentence.
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
				c := res
				c.Clauses = append([]string(nil), res.Clauses...)
				c.Evidence = append([]Evidence(nil), res.Evidence...)
				out.Results = append(out.Results, c)
				continue
			}
			m := &out.Results[j]
			evidence := append(m.Evidence, res.Evidence...)
			over := joinOver(m.DecidedOver, res.DecidedOver)
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
			m.DecidedOver = over
		}
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

// joinOver joins two shards' decided-over sentences, once each.
func joinOver(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "" || strings.Contains(a, b):
		return a
	}
	return a + "; " + b
}
