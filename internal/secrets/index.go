package secrets

import (
	"math/bits"
	"sort"
)

// hashBase is the rolling hash's multiplier (odd, so that multiplication is invertible modulo 2^64).
const hashBase = 1099511628211

// entry is one key of the index: the hash of an encoded form's first bytes and the form's ref.
type entry struct {
	hash uint64
	ref  int32
}

// table holds the keys of one length, sorted by hash, behind a bit filter that rejects most positions of a
// text with one memory read.
type table struct {
	entries []entry
	filter  []uint64
	shift   uint
}

// index maps the hashes of keys to refs, one table per key length.
type index struct {
	tables [keyLen + 1]*table
	dirty  bool
}

// size is the number of keys in the index.
func (x *index) size() int {
	n := 0
	for _, t := range x.tables {
		if t != nil {
			n += len(t.entries)
		}
	}
	return n
}

func hashOf(s string) uint64 {
	var h uint64
	for i := 0; i < len(s); i++ {
		h = h*hashBase + uint64(s[i])
	}
	return h
}

// mix spreads a hash's bits so that its top bits index the filter well.
func mix(h uint64) uint64 { return (h ^ h>>29) * 0xbf58476d1ce4e5b9 }

func (x *index) add(key string, r int32) {
	t := x.tables[len(key)]
	if t == nil {
		t = &table{}
		x.tables[len(key)] = t
	}
	t.entries = append(t.entries, entry{hash: hashOf(key), ref: r})
	x.dirty = true
}

// prepare sorts every table and rebuilds its filter.
func (x *index) prepare() {
	for _, t := range x.tables {
		if t == nil {
			continue
		}
		sort.Slice(t.entries, func(i, j int) bool {
			if t.entries[i].hash != t.entries[j].hash {
				return t.entries[i].hash < t.entries[j].hash
			}
			return t.entries[i].ref < t.entries[j].ref
		})
		logBits := max(10, bits.Len(uint(len(t.entries)))+4) // about 1 set bit in 16
		t.filter = make([]uint64, 1<<(logBits-6))
		t.shift = uint(64 - logBits)
		for _, e := range t.entries {
			b := mix(e.hash) >> t.shift
			t.filter[b>>6] |= 1 << (b & 63)
		}
	}
	x.dirty = false
}

// scan calls fn with the position and ref of every key whose hash matches the text there. The index must be
// prepared.
func scan[T ~string | ~[]byte](x *index, t T, fn func(pos int, r int32)) {
	for w, tb := range x.tables {
		if tb == nil || len(tb.entries) == 0 || w > len(t) {
			continue
		}
		var h, out uint64 = 0, 1 // out is hashBase^(w-1)
		for i := 0; i < w; i++ {
			h = h*hashBase + uint64(t[i])
			if i > 0 {
				out *= hashBase
			}
		}
		for pos := 0; ; pos++ {
			b := mix(h) >> tb.shift
			if tb.filter[b>>6]&(1<<(b&63)) != 0 {
				tb.lookup(h, pos, fn)
			}
			if pos+w >= len(t) {
				break
			}
			h = (h-uint64(t[pos])*out)*hashBase + uint64(t[pos+w])
		}
	}
}

func (tb *table) lookup(h uint64, pos int, fn func(pos int, r int32)) {
	i := sort.Search(len(tb.entries), func(i int) bool { return tb.entries[i].hash >= h })
	for ; i < len(tb.entries) && tb.entries[i].hash == h; i++ {
		fn(pos, tb.entries[i].ref)
	}
}
