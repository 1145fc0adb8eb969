package report

import "testing"

// TestMergeAddsTalliesAndRendersAfter: shards' counted decided-over facts add up, and the sentence is
// rendered from the sum, not pieced together from the shards' sentences.
func TestMergeAddsTalliesAndRendersAfter(t *testing.T) {
	shard := func(tally *Tally) *Report {
		return &Report{Schema: Schema, Provider: Provider{Name: "p"}, Seed: 1, Results: []Result{{
			Check: "TURN-VALIDITY-FRESH", Status: StatusPassed, DecidedOver: tally.Sentence(), Tally: tally}}}
	}
	a := &Tally{Noun: "prepare_turn calls", Calls: 12, Scenarios: 3, Counts: []Count{{"refreshes", 2}}}
	b := &Tally{Noun: "prepare_turn calls", Calls: 2, Scenarios: 1, Counts: []Count{{"retries", 1}, {"refreshes", 1}}}
	c := &Tally{Noun: "prepare_turn calls", Calls: 12, Scenarios: 3, Counts: []Count{{"refreshes", 2}}}
	m, err := Merge(shard(a), shard(b), shard(c))
	if err != nil {
		t.Fatal(err)
	}
	got := m.Results[0]
	want := "26 prepare_turn calls in 7 scenarios: 5 refreshes, 1 retries"
	if got.DecidedOver != want || got.Tally == nil || got.Tally.Calls != 26 {
		t.Fatalf("merged decided_over = %q (tally %+v), want %q", got.DecidedOver, got.Tally, want)
	}
	if a.Calls != 12 || len(a.Counts) != 1 || a.Counts[0].N != 2 {
		t.Errorf("Merge modified a shard's tally: %+v", a)
	}
}

// TestMergeKeepsEverySentenceThatIsNotACount: sentences without tallies are joined distinct, whole: one that
// happens to be part of another ("2 ..." inside "12 ...") is not dropped.
func TestMergeKeepsEverySentenceThatIsNotACount(t *testing.T) {
	shard := func(over string) *Report {
		return &Report{Schema: Schema, Provider: Provider{Name: "p"}, Seed: 1, Results: []Result{{Check: "X", Status: StatusPassed, DecidedOver: over}}}
	}
	m, err := Merge(shard("12 probes of the image wrapper w"), shard("2 probes of the image wrapper w"), shard("12 probes of the image wrapper w"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Results[0].DecidedOver, "12 probes of the image wrapper w; 2 probes of the image wrapper w"; got != want {
		t.Fatalf("merged decided_over = %q, want %q", got, want)
	}
}
