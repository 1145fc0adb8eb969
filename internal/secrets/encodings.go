package secrets

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Encoding names the form a secret was found in.
type Encoding string

// The forms a careless provider leaks a secret in, and so the forms the kit hunts. docs/checks.md (LEAK-*)
// lists the forms it does not hunt and why.
const (
	EncRaw       Encoding = "raw"
	EncJSON      Encoding = "json-escaped"
	EncURL       Encoding = "url-encoded"
	EncURLTwice  Encoding = "url-encoded twice"
	EncHex       Encoding = "hex"
	EncBase64    Encoding = "base64"
	EncBase64URL Encoding = "base64url"
	EncBase32    Encoding = "base32"
	// EncCase is the value itself with its letters in another case (upper-cased, lower-cased or mixed): hunted
	// for values made of letters, digits and the punctuation of tokens (hex and base32 keys, canaries, bearer
	// tokens), whose case a provider may change and which stay as secret in any case.
	EncCase Encoding = "case-changed"
)

// Suffixes of the label of a form found split by whitespace: the text joined without its spaces and line
// breaks holds the form, and the form crosses at least one of them.
const (
	splitLines  = ", split across lines"
	splitSpaces = ", split by spaces"
)

// encoder is one way of writing a value. Every encoder is prefix-compatible: the encoding of a prefix of a
// value that ends at the start of a UTF-8 sequence is a prefix of the encoding of the whole value. The index
// relies on it: it keys a long secret by the encoding of its first bytes only.
type encoder struct {
	name Encoding
	enc  func(string) string
	// pre and group describe a block encoding (group > 0): the value starts pre bytes into a group of group
	// bytes, and chunk encodes a piece of it that starts on a group boundary.
	pre, group int
	chunk      func(string) string
	// fold marks a form hunted whatever the case of its letters: enc writes it in lower case, and it is looked
	// for in the text lowered the same way (ASCII letters only, so offsets do not move).
	fold bool
	// applies, when set, says whether the form is hunted for a value at all.
	applies func(string) bool
}

// encoders lists every hunted form. Their order is the order matches at one offset are reported in.
var encoders = func() []encoder {
	out := []encoder{
		{name: EncRaw, enc: func(v string) string { return v }},
		{name: EncJSON, enc: goJSON},
		{name: EncJSON, enc: func(v string) string { return pyJSON(v, true) }},
		{name: EncJSON, enc: func(v string) string { return pyJSON(v, false) }},
		{name: EncURL, enc: url.QueryEscape},
		{name: EncURL, enc: func(v string) string { return strings.ReplaceAll(url.QueryEscape(v), "+", "%20") }},
		{name: EncURL, enc: func(v string) string { return lowerHexEscapes(url.QueryEscape(v)) }},
		{name: EncURL, enc: url.PathEscape},
		{name: EncURLTwice, enc: func(v string) string { return url.QueryEscape(url.QueryEscape(v)) }},
		{name: EncHex, enc: func(v string) string { return hex.EncodeToString([]byte(v)) }},
		{name: EncHex, enc: func(v string) string { return strings.ToUpper(hex.EncodeToString([]byte(v))) }},
		{name: EncCase, enc: asciiLower, fold: true, applies: tokenLike},
	}
	block := func(name Encoding, encode func([]byte) string, pre, group, chars int) encoder {
		return encoder{name: name, enc: aligned(encode, pre, group, chars), pre: pre, group: group, chunk: aligned(encode, 0, group, chars)}
	}
	for i := 0; i < 3; i++ {
		out = append(out,
			block(EncBase64, base64.StdEncoding.EncodeToString, i, 3, 4),
			block(EncBase64URL, base64.URLEncoding.EncodeToString, i, 3, 4))
	}
	lower := func(encode func([]byte) string) func([]byte) string {
		return func(b []byte) string { return asciiLower(encode(b)) }
	}
	for i := 0; i < 5; i++ {
		// base32 is written in either case (Python's b32encode(...).lower(), RFC 4648's "case-insensitive").
		e := block(EncBase32, lower(base32.StdEncoding.EncodeToString), i, 5, 8)
		e.fold = true
		out = append(out, e)
	}
	return out
}()

// aligned returns the characters of a block encoding (group bytes in, chars characters out) of a value
// preceded by pre other bytes that depend on the value's bytes only: the form the value takes inside any
// larger encoded blob in which it starts pre bytes into a group, padded or not.
func aligned(encode func([]byte) string, pre, group, chars int) func(string) string {
	return func(v string) string {
		src := make([]byte, pre+len(v))
		copy(src[pre:], v)
		bits := 8 * group / chars // bits per character
		start := (8*pre + bits - 1) / bits
		end := 8 * (pre + len(v)) / bits
		all := encode(src)
		if end <= start || end > len(all) {
			return ""
		}
		return all[start:end]
	}
}

// goJSON is the body of the JSON string Go (and most JavaScript-style encoders) writes for v.
func goJSON(v string) string {
	j, err := json.Marshal(v)
	if err != nil || len(j) < 2 {
		return ""
	}
	return string(j[1 : len(j)-1])
}

// pyJSON is the body of the JSON string Python's json.dumps writes for v, with ensure_ascii (the default:
// every non-ASCII character as \uXXXX, astral ones as surrogate pairs) or without.
func pyJSON(v string, ensureASCII bool) string {
	const hexdigits = "0123456789abcdef"
	var b strings.Builder
	u4 := func(r rune) {
		b.WriteString(`\u`)
		for s := 12; s >= 0; s -= 4 {
			b.WriteByte(hexdigits[(r>>s)&0xf])
		}
	}
	for _, r := range v {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			u4(r)
		case r < 0x80 || !ensureASCII:
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			u4(0xd800 + (r>>10)&0x3ff)
			u4(0xdc00 + r&0x3ff)
		default:
			u4(r)
		}
	}
	return b.String()
}

// contextEncoding is the encoding a raw occurrence of value at t[pos:pos+n] shows by its surroundings, when
// that encoding writes value unchanged: a JSON string (`"key": "value"`) is json-escaped, a URL query value
// (`?key=value&`) is url-encoded. Otherwise it is raw.
func contextEncoding[T ~string | ~[]byte](t T, pos, n int, value string) Encoding {
	if pos == 0 {
		return EncRaw
	}
	before := t[pos-1]
	after := byte(0)
	if pos+n < len(t) {
		after = t[pos+n]
	}
	switch before {
	case '"':
		if after != '"' || goJSON(value) != value {
			return EncRaw
		}
		for i := pos - 2; i >= 0; i-- {
			if isSpace(t[i]) {
				continue
			}
			if c := t[i]; c == ':' || c == '[' || c == ',' || c == '{' {
				return EncJSON
			}
			return EncRaw
		}
	case '=':
		if url.QueryEscape(value) != value {
			return EncRaw
		}
		if after == '&' {
			return EncURL
		}
		for i := pos - 2; i >= 0; i-- {
			c := t[i]
			if isSpace(c) || c == '"' || c == '\'' {
				return EncRaw
			}
			if c == '?' || c == '&' {
				return EncURL
			}
		}
	}
	return EncRaw
}

// asciiLower lowers the ASCII letters of s and leaves every other byte alone, so that offsets in the lowered
// text are offsets in s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// tokenLike tells whether v is written like a token or key (letters, digits and - _ . ~ + / = :, at least
// one letter): such a value changes case without changing what it grants, so its other cases are hunted too.
func tokenLike(v string) bool {
	letter := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9', strings.IndexByte("-_.~+/=:", c) >= 0:
		default:
			return false
		}
	}
	return letter
}

// lowerHexEscapes turns %2F into %2f.
func lowerHexEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = toLower(b[i+1])
			b[i+2] = toLower(b[i+2])
		}
	}
	return string(b)
}

func toLower(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// pieceBytes is how much of a long secret is encoded at a time when a hit is confirmed.
const pieceBytes = 64 << 10

// pieces calls fn with value's form e a piece at a time (the pieces joined are e.enc(value)), until fn
// returns false. Writing a long secret's form this way needs memory for one piece only.
func pieces(e encoder, value string, fn func(piece string) bool) {
	for c := 0; c < len(value); {
		var next int
		if e.group > 0 {
			next = min(len(value), ((e.pre+c+pieceBytes)/e.group)*e.group-e.pre)
		} else {
			next = prefixCut(value, c+pieceBytes)
		}
		var piece string
		switch {
		case c == 0:
			piece = e.enc(value[:next])
		case e.group > 0:
			piece = e.chunk(value[c:next])
		default:
			piece = e.enc(value[c:next])
		}
		if !fn(piece) {
			return
		}
		c = next
	}
}

// formInfo is what confirming a hit on a long secret's form needs: the form's length, the hash of its last
// keyLen bytes (with the index's hash), and the hash of the whole form (with a base drawn at random for the
// set, so that no input can be built to collide with it) and that base to the power n-1.
type formInfo struct {
	n          int
	tail       uint64
	full, high uint64
}

func infoOf(e encoder, value string, base uint64) formInfo {
	fi := formInfo{high: 1}
	tail := make([]byte, 0, 2*keyLen)
	pieces(e, value, func(p string) bool {
		for i := 0; i < len(p); i++ {
			fi.full = fi.full*base + uint64(p[i])
		}
		fi.n += len(p)
		tail = append(tail, p[max(0, len(p)-keyLen):]...)
		if len(tail) > keyLen {
			tail = append(tail[:0], tail[len(tail)-keyLen:]...)
		}
		return true
	})
	for b, e := base, fi.n-1; e > 0; e >>= 1 { // base^(n-1) by squaring
		if e&1 == 1 {
			fi.high *= b
		}
		b *= b
	}
	fi.tail = hashOf(string(tail))
	return fi
}

// windowHash is the hash, with base, of t[at:at+n].
func windowHash[T ~string | ~[]byte](t T, at, n int, base uint64) uint64 {
	var h uint64
	for i := at; i < at+n; i++ {
		h = h*base + uint64(t[i])
	}
	return h
}

// occurrences calls fn with every position at which t holds a form of length fi.n whose hash is fi.full,
// skipping positions inside an occurrence already reported. One pass over t.
func occurrences[T ~string | ~[]byte](t T, fi formInfo, base uint64, fn func(pos int)) {
	n := fi.n
	if n == 0 || n > len(t) {
		return
	}
	window := func(at int) uint64 { return windowHash(t, at, n, base) }
	h := window(0)
	for pos := 0; ; {
		if h == fi.full {
			fn(pos)
			pos += n
			if pos+n > len(t) {
				return
			}
			h = window(pos)
			continue
		}
		if pos+n >= len(t) {
			return
		}
		h = (h-uint64(t[pos])*fi.high)*base + uint64(t[pos+n])
		pos++
	}
}

// equalAt tells whether t holds n at pos (pos+len(n) <= len(t)).
func equalAt[T ~string | ~[]byte](t T, pos int, n string) bool {
	for i := 0; i < len(n); i++ {
		if t[pos+i] != n[i] {
			return false
		}
	}
	return true
}

// prefixCut returns the length of the shortest prefix of v of at least n bytes that ends where a UTF-8
// sequence starts (or v's length), so that every encoder encodes it as a prefix of v's encoding.
func prefixCut(v string, n int) int {
	if n >= len(v) {
		return len(v)
	}
	for n < len(v) && !utf8.RuneStart(v[n]) {
		n++
	}
	return n
}
