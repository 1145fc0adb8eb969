// Package secrets finds planted and returned secrets in text, in the encodings a careless provider leaks
// them with (raw, JSON-escaped the way Go and Python write it, URL-encoded once or twice, hex in either case,
// base64, URL-safe base64 and base32 at every alignment, padded or not), and masks them so that the kit
// itself never prints one.
//
// The cost of a search does not grow with the number or the size of the secrets: every encoded form is keyed
// by a hash of its first bytes (at most 32), one rolling hash per key length runs over the text, and a hit is
// confirmed against the whole form. A long secret keeps only its value; its encoded forms are written a piece
// at a time when a hit needs confirming. Finding and masking are linear in the length of the text.
package secrets

import (
	"crypto/rand"
	"encoding/binary"
	"sort"
	"strings"
	"sync"
)

// MinLength is the shortest value treated as a secret: shorter values (a returned "1", say) would match
// everywhere and prove nothing.
const MinLength = 8

// MaxSecrets is the most distinct secrets one Set hunts. Values added past it are counted (see Dropped) but
// not hunted: whoever fills a set reports that the scan was incomplete.
const MaxSecrets = 200_000

// maxSecrets is MaxSecrets (tests lower it).
var maxSecrets = MaxSecrets

const (
	// keyLen is the longest key: the first bytes of an encoded form that the index hashes.
	keyLen = 32
	// prefixBytes of a value are enough to write the first keyLen bytes of every encoded form.
	prefixBytes = keyLen + 8
	// maxShort is the longest value whose encoded forms are kept whole (canaries, tokens, credentials and
	// most environment values); longer values keep only their value and are confirmed by hash.
	maxShort = 128
	// minNeedle is the shortest encoded form hunted.
	minNeedle = MinLength / 2
)

// Secret is one secret value, where it came from ("workload identity token of session s1", "configuration
// field secrets.api_key") and its kind: the kit's one secret type, for the secrets a simulated run plants
// (simulate's History.Secrets), the canaries conformance plants in the configuration, and every Set. Origin
// is for people; what a check decides on is Kind, never the text of Origin.
type Secret struct {
	Value  string
	Origin string
	Kind   Kind
}

// Kind says what a secret is, for the checks that treat kinds apart: LEAK-FILE hunts in files only what the
// platform handed the provider (workload identity tokens and configuration canaries), LEAK-CROSS-SESSION
// gives each credential the double issued an owner.
type Kind uint8

const (
	// KindOther is a secret no check tells apart from others: a material the provider returned, a test's value.
	KindOther Kind = iota
	// KindWorkloadToken is a workload identity token the platform handed a Session.
	KindWorkloadToken
	// KindConfigField is a canary planted in a secret field of the configuration.
	KindConfigField
	// KindCredential is a credential the deployment double issued.
	KindCredential
	// KindServiceValue is a value one of the provider's declared services answered.
	KindServiceValue
)

// Handed tells whether the platform handed the provider this kind of secret (a workload identity token or a
// configuration canary), as against one the provider obtained or made.
func (k Kind) Handed() bool { return k == KindWorkloadToken || k == KindConfigField }

// Match is one place a secret was found.
type Match struct {
	Origin   string
	Encoding string
	// Kind is the found secret's kind.
	Kind Kind
	// ID is the found secret's number in its Set: the order in which it was added, from 0, counting only the
	// secrets added (AddSecret reported true).
	ID int
	// Offset is the byte offset of the match in the searched text.
	Offset int
}

// ref is one encoded form of one secret.
type ref struct {
	secret int32
	enc    uint8
	// needle is the whole encoded form, or "" for a long secret (written a piece at a time on a hit).
	needle string
}

// Set is a set of secrets and their encoded forms. The zero value is empty and ready to use. It is safe for
// concurrent use.
type Set struct {
	mu      sync.RWMutex
	seen    map[string]struct{}
	secrets []Secret
	refs    []ref
	idx     index // forms compared byte for byte
	fidx    index // forms compared whatever the case (encoder.fold), keyed in lower case
	dropped int

	base   uint64
	infoMu sync.Mutex
	infos  map[int32]formInfo
}

// Add adds a secret of KindOther; values shorter than MinLength are ignored. It reports whether the value
// was added.
func (s *Set) Add(value, origin string) bool {
	return s.AddSecret(Secret{Value: value, Origin: origin})
}

// AddSecret adds a secret with its kind; values shorter than MinLength, and values already in the set, are
// not added. It reports whether the secret was added (it then has the next ID).
func (s *Set) AddSecret(sec Secret) bool {
	value := sec.Value
	if len(value) < MinLength {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]struct{}{}
	}
	if _, ok := s.seen[value]; ok {
		return false
	}
	if len(s.secrets) >= maxSecrets {
		s.dropped++
		return false
	}
	if s.base == 0 {
		s.base = randomBase()
	}
	s.seen[value] = struct{}{}
	id := int32(len(s.secrets))
	s.secrets = append(s.secrets, sec)
	cut := len(value)
	if cut > maxShort {
		cut = prefixCut(value, prefixBytes)
	}
	long := cut < len(value)
	type form struct {
		fold bool
		text string
	}
	forms := make(map[form]bool, len(encoders))
	for ei, e := range encoders {
		if e.applies != nil && !e.applies(value) {
			continue
		}
		text := e.enc(value[:cut])
		if len(text) < minNeedle || (!long && forms[form{e.fold, text}]) {
			continue
		}
		forms[form{e.fold, text}] = true
		key := text
		if len(key) > keyLen {
			key = key[:keyLen]
		}
		r := ref{secret: id, enc: uint8(ei)}
		if !long {
			r.needle = text
		}
		if e.fold {
			s.fidx.add(key, int32(len(s.refs)))
		} else {
			s.idx.add(key, int32(len(s.refs)))
		}
		s.refs = append(s.refs, r)
	}
	return true
}

// Len is the number of secrets in the set.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.secrets)
}

// Dropped is the number of distinct values refused because the set already held MaxSecrets.
func (s *Set) Dropped() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.dropped
}

// readLock takes the read lock with the index ready to search.
func (s *Set) readLock() {
	for {
		s.mu.RLock()
		if !s.idx.dirty && !s.fidx.dirty {
			return
		}
		s.mu.RUnlock()
		s.mu.Lock()
		if s.idx.dirty {
			s.idx.prepare()
		}
		if s.fidx.dirty {
			s.fidx.prepare()
		}
		s.mu.Unlock()
	}
}

// info returns the length and tail hash of a long form, working them out on first use. Called with the read
// lock held.
func (s *Set) info(r int32) formInfo {
	s.infoMu.Lock()
	fi, ok := s.infos[r]
	s.infoMu.Unlock()
	if ok {
		return fi
	}
	rf := s.refs[r]
	fi = infoOf(encoders[rf.enc], s.secrets[rf.secret].Value, s.base)
	s.infoMu.Lock()
	if s.infos == nil {
		s.infos = map[int32]formInfo{}
	}
	s.infos[r] = fi
	s.infoMu.Unlock()
	return fi
}

// randomBase returns an odd multiplier for the hashes of whole forms, unknown to any provider.
func randomBase() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0x9e3779b97f4a7c15
	}
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// hit is one confirmed occurrence of an encoded form.
type hit struct {
	pos, n int
	ref    int32
	split  splitKind
}

// hits calls fn for every confirmed occurrence of every encoded form in t, in no particular order. Called
// with the read lock held. A short form is compared where its key matches. A long form is confirmed where its
// key and the hash of its last bytes both match, by the hash of the whole form: at each such position while
// that costs less than one pass over t, else in one rolling pass over t. However many long secrets t holds
// and however often their first bytes recur, the work stays linear in the length of t.
func hits[T ~string | ~[]byte](s *Set, x *index, t T, fn func(hit)) {
	type candidates struct {
		fi   formInfo
		pos  []int
		full bool // too many candidates: one rolling pass instead
	}
	var long map[int32]*candidates
	scan(x, t, func(pos int, r int32) {
		rf := s.refs[r]
		if rf.needle != "" {
			if len(t)-pos >= len(rf.needle) && equalAt(t, pos, rf.needle) {
				fn(hit{pos: pos, n: len(rf.needle), ref: r})
			}
			return
		}
		if len(t)-pos < len(s.secrets[rf.secret].Value) {
			return // every form is at least as long as the value
		}
		c := long[r]
		if c == nil {
			if long == nil {
				long = map[int32]*candidates{}
			}
			c = &candidates{fi: s.info(r)}
			long[r] = c
		}
		if c.full || len(t)-pos < c.fi.n || hashOf(string(t[pos+c.fi.n-keyLen:pos+c.fi.n])) != c.fi.tail {
			return
		}
		c.pos = append(c.pos, pos)
		if len(c.pos)*c.fi.n > len(t) {
			c.full, c.pos = true, nil
		}
	})
	refs := make([]int32, 0, len(long))
	for r := range long {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i] < refs[j] })
	for _, r := range refs {
		c := long[r]
		if c.full {
			occurrences(t, c.fi, s.base, func(pos int) { fn(hit{pos: pos, n: c.fi.n, ref: r}) })
			continue
		}
		end := 0
		for _, pos := range c.pos {
			if pos < end {
				continue // inside an occurrence already found
			}
			if windowHash(t, pos, c.fi.n, s.base) == c.fi.full {
				fn(hit{pos: pos, n: c.fi.n, ref: r})
				end = pos + c.fi.n
			}
		}
	}
}

// Find returns every secret found in text, at most one match (the first) per secret and encoding, in order of
// offset (the longest form first at one offset).
func (s *Set) Find(text []byte) []Match { return find(s, text) }

// FindString is Find for strings.
func (s *Set) FindString(text string) []Match { return find(s, text) }

func find[T ~string | ~[]byte](s *Set, text T) []Match {
	if len(text) < minNeedle {
		return nil
	}
	s.readLock()
	defer s.mu.RUnlock()
	var found []hit
	allHits(s, text, func(h hit) { found = append(found, h) })
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if a.pos != b.pos {
			return a.pos < b.pos
		}
		if a.n != b.n {
			return a.n > b.n
		}
		return a.ref < b.ref
	})
	// One match per secret and encoding: the first. Forms of one secret that are the same text (a value
	// with nothing to escape) count once, under the first encoder that writes it.
	type span struct{ secret, pos, n int }
	type key struct {
		secret int32
		label  string
	}
	spans, keys := map[span]bool{}, map[key]bool{}
	var out []Match
	for _, h := range found {
		rf := s.refs[h.ref]
		label := label(s, text, h)
		sp, k := span{int(rf.secret), h.pos, h.n}, key{rf.secret, label}
		if spans[sp] || keys[k] {
			continue
		}
		spans[sp], keys[k] = true, true
		sec := s.secrets[rf.secret]
		out = append(out, Match{Origin: sec.Origin, Encoding: label, Kind: sec.Kind, ID: int(rf.secret), Offset: h.pos})
	}
	return out
}

// label names the form of a hit: its encoder's name, the encoding its surroundings show when the value reads
// the same raw and encoded (a token with nothing to escape, found as a JSON string or a URL query value), and
// whether it was split by whitespace. Called with the read lock held.
func label[T ~string | ~[]byte](s *Set, t T, h hit) string {
	rf := s.refs[h.ref]
	name := encoders[rf.enc].name
	if name == EncRaw && h.split == notSplit && rf.needle != "" {
		name = contextEncoding(t, h.pos, h.n, rf.needle)
	}
	return string(name) + h.split.suffix()
}

// Marker is what Mask writes in place of a secret found in the given encoding.
func Marker(enc string) string { return markerStart + enc + "›" }

// Mask replaces every occurrence of every secret, in every encoding, with a marker that says which encoding
// was there but never the value. Overlapping occurrences are masked as one, named after the longest.
func (s *Set) Mask(text string) string {
	if len(text) < minNeedle {
		return text
	}
	s.readLock()
	var found []hit
	allHits(s, text, func(h hit) {
		// Inside a base64 or base32 blob, the characters either side of a secret's form mix its bits with
		// its neighbours': mask them too, so that the masked text says nothing of the value and is the same
		// whichever canary was planted.
		rf := s.refs[h.ref]
		if e := encoders[rf.enc]; e.group > 0 {
			if e.pre > 0 && h.pos > 0 {
				h.pos, h.n = h.pos-1, h.n+1
			}
			if (e.pre+len(s.secrets[rf.secret].Value))%e.group != 0 && h.pos+h.n < len(text) {
				h.n++
			}
		}
		found = append(found, h)
	})
	labels := make([]string, len(found))
	for i, h := range found {
		labels[i] = Marker(label(s, text, h))
	}
	s.mu.RUnlock()
	if len(found) == 0 {
		return text
	}
	order := make([]int, len(found))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := found[order[i]], found[order[j]]
		if a.pos != b.pos {
			return a.pos < b.pos
		}
		if a.n != b.n {
			return a.n > b.n
		}
		if a.split != b.split {
			return a.split < b.split
		}
		return a.ref < b.ref
	})
	out := make([]byte, 0, len(text))
	at := 0
	for k := 0; k < len(order); {
		g := found[order[k]]
		start, end, label, longest := g.pos, g.pos+g.n, labels[order[k]], g.n
		for k++; k < len(order) && found[order[k]].pos < end; k++ {
			h := found[order[k]]
			end = max(end, h.pos+h.n)
			if h.n > longest {
				longest, label = h.n, labels[order[k]]
			}
		}
		out = append(out, text[at:start]...)
		out = append(out, label...)
		at = end
	}
	out = append(out, text[at:]...)
	return string(out)
}

// markerStart opens every marker Mask writes.
const markerStart = "‹secret:"

// HasMarker tells whether text holds a marker Mask wrote (whatever the encoding it names).
func HasMarker(text string) bool { return strings.Contains(text, markerStart) }

// MaskError returns err with its text masked (nil for nil). The result unwraps to err, so errors.Is and
// errors.As still see the cause and its type; only Error() is masked, and that is what gets printed.
func (s *Set) MaskError(err error) error {
	if err == nil {
		return nil
	}
	return &maskedError{text: s.Mask(err.Error()), err: err}
}

// maskedError is an error whose text is masked.
type maskedError struct {
	text string
	err  error
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }
