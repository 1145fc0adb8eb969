package secrets

import "sort"

// A provider that prints a secret in pieces (two print calls, print(a, b), a value wrapped across lines, one
// character at a time with spaces) leaks it as surely as one that prints it whole. The hunt therefore also
// searches the text with its whitespace removed, and reports a form found there that crosses removed
// whitespace as split (its offset and length are those of the whole stretch of the original text, so that
// masking covers every piece).

// splitKind says whether a hit crosses removed whitespace, and which.
type splitKind uint8

const (
	notSplit splitKind = iota
	splitBySpaces
	splitByLines
)

func (k splitKind) suffix() string {
	switch k {
	case splitBySpaces:
		return splitSpaces
	case splitByLines:
		return splitLines
	}
	return ""
}

// gap is one run of whitespace removed from a text: it stood before position at of the squeezed text, and
// before is how many bytes were removed before it.
type gap struct {
	at, before, n int
	newline       bool
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// squeeze returns t without its whitespace and the runs removed, or ok false when t has none.
func squeeze[T ~string | ~[]byte](t T) (out []byte, gaps []gap, ok bool) {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !isSpace(c) {
			out = append(out, c)
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(t))
			for j := 0; j < i; j++ {
				out = append(out, t[j])
			}
		}
		if n := len(gaps); n > 0 && gaps[n-1].at == len(out) {
			gaps[n-1].n++
			gaps[n-1].newline = gaps[n-1].newline || c == '\n' || c == '\r'
			continue
		}
		before := 0
		if n := len(gaps); n > 0 {
			before = gaps[n-1].before + gaps[n-1].n
		}
		gaps = append(gaps, gap{at: len(out), before: before, n: 1, newline: c == '\n' || c == '\r'})
	}
	return out, gaps, len(gaps) > 0
}

// unsqueeze maps a hit [pos, pos+n) of the squeezed text to the original text, with the kind of whitespace
// it crosses (notSplit when it crosses none: the plain pass found it already).
func unsqueeze(gaps []gap, pos, n int) (start, length int, kind splitKind) {
	// removedBefore is the number of bytes removed before squeezed position p (runs standing before p or at it).
	removedBefore := func(p int) int {
		i := sort.Search(len(gaps), func(i int) bool { return gaps[i].at > p })
		if i == 0 {
			return 0
		}
		return gaps[i-1].before + gaps[i-1].n
	}
	start = pos + removedBefore(pos)
	last := pos + n - 1
	end := last + removedBefore(last) + 1
	i := sort.Search(len(gaps), func(i int) bool { return gaps[i].at > pos })
	for ; i < len(gaps) && gaps[i].at <= last; i++ {
		if gaps[i].newline {
			kind = splitByLines
		} else if kind == notSplit {
			kind = splitBySpaces
		}
	}
	return start, end - start, kind
}

// allHits calls fn for every confirmed occurrence in t of every form: byte for byte, whatever the case for
// the forms that fold, and split by whitespace. Called with the read lock held.
func allHits[T ~string | ~[]byte](s *Set, t T, fn func(hit)) {
	folds := len(s.fidx.tables) > 0 && s.fidx.size() > 0
	hits(s, &s.idx, t, fn)
	if folds {
		hits(s, &s.fidx, asciiLower(string(t)), fn)
	}
	sq, gaps, ok := squeeze(t)
	if !ok || len(sq) < minNeedle {
		return
	}
	split := func(h hit) {
		start, n, kind := unsqueeze(gaps, h.pos, h.n)
		if kind == notSplit {
			return
		}
		fn(hit{pos: start, n: n, ref: h.ref, split: kind})
	}
	hits(s, &s.idx, sq, split)
	if folds {
		hits(s, &s.fidx, asciiLower(string(sq)), split)
	}
}
