package explore

// shareWindow is how many of the latest fresh and varied scenarios the fresh share looks back on.
const shareWindow = 48

// The fresh share: baseFresh when fresh scenarios and variations pay alike, moved by the ratio of what they
// pay, within bounds (neither kind ever stops). Fresh scenarios lead because guided generation steers them
// by novelty too (novelty.go): measured on leak-cross-session-reattach, a fixed share of 0.8 found the
// breach after a median of 21 scenarios, one of 0.5 after 30 (docs/performance.md).
const (
	baseFresh = 0.8
	minFresh  = 0.5
	maxFresh  = 0.9
)

// share decides which share of a guided exploration's scenarios are generated fresh rather than varied from
// a seed, by what each kind has paid lately: the share of the latest fresh scenarios that joined the corpus
// against the share of the latest variations that did (each with one success and one failure assumed, so
// that a kind not yet tried counts as even). Alike, the share is baseFresh; variations paying twice as
// much bring it to minFresh, fresh scenarios paying twice as much to maxFresh. Variations that stop reaching anything new give way to fresh
// scenarios; a corpus that grows by its variations gets more of them. It sees scenarios in index order only,
// so the share is fixed by the seed and the saved corpus, as every other choice of the guide is.
type share struct {
	varied map[int]bool // by scenario index: whether it was a variation (until observed)
	// latest outcomes (joined the corpus or not) of each kind, oldest first.
	freshOut, variedOut []bool
}

func newShare() share { return share{varied: map[int]bool{}} }

// chose records what scenario index is.
func (s *share) chose(index int, varied bool) { s.varied[index] = varied }

// joined records whether scenario index, now observed, joined the corpus.
func (s *share) joined(index int, joined bool) {
	varied, ok := s.varied[index]
	if !ok {
		return // a replayed corpus seed: neither kind
	}
	delete(s.varied, index)
	push := func(xs []bool) []bool {
		xs = append(xs, joined)
		if len(xs) > shareWindow {
			xs = xs[1:]
		}
		return xs
	}
	if varied {
		s.variedOut = push(s.variedOut)
	} else {
		s.freshOut = push(s.freshOut)
	}
}

// fresh is the probability that the next scenario is fresh.
func (s *share) fresh() float64 {
	rate := func(xs []bool) float64 {
		n := 1
		for _, x := range xs {
			n += bit(x)
		}
		return float64(n) / float64(len(xs)+2)
	}
	f, m := rate(s.freshOut), rate(s.variedOut)
	return min(maxFresh, max(minFresh, baseFresh*2*f/(f+m)))
}
