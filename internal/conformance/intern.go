package conformance

import (
	"hash/maphash"
	"sync"
)

// interner turns byte strings into strings once per distinct content: a provider that returns the same large
// file from every call gives the checks one string of it, not one per call (docs/writing-a-provider.md,
// "Large materials").
type interner struct {
	mu   sync.Mutex
	seed maphash.Seed
	byH  map[uint64][]string
}

// str returns b as a string, shared with every earlier equal content.
func (in *interner) str(b []byte) string {
	if len(b) < 4<<10 {
		return string(b)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.byH == nil {
		in.byH, in.seed = map[uint64][]string{}, maphash.MakeSeed()
	}
	h := maphash.Bytes(in.seed, b)
	for _, s := range in.byH[h] {
		if s == string(b) { // compared without a copy
			return s
		}
	}
	s := string(b)
	in.byH[h] = append(in.byH[h], s)
	return s
}
