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
)

// encoder is one way of writing a value. Every encoder is prefix-compatible: the encoding of a prefix of a
// value that ends at the start of a UTF-8 sequence is a prefix of the encoding of the whole value. The index
// relies on it: it keys a long secret by the encoding of its first bytes only.
type encoder struct {
	name Encoding
	enc  func(string) string
}

// encoders lists every hunted form. Their order is the order matches at one offset are reported in.
var encoders = func() []encoder {
	out := []encoder{
		{EncRaw, func(v string) string { return v }},
		{EncJSON, goJSON},
		{EncJSON, func(v string) string { return pyJSON(v, true) }},
		{EncJSON, func(v string) string { return pyJSON(v, false) }},
		{EncURL, url.QueryEscape},
		{EncURL, func(v string) string { return strings.ReplaceAll(url.QueryEscape(v), "+", "%20") }},
		{EncURL, func(v string) string { return lowerHexEscapes(url.QueryEscape(v)) }},
		{EncURL, url.PathEscape},
		{EncURLTwice, func(v string) string { return url.QueryEscape(url.QueryEscape(v)) }},
		{EncHex, func(v string) string { return hex.EncodeToString([]byte(v)) }},
		{EncHex, func(v string) string { return strings.ToUpper(hex.EncodeToString([]byte(v))) }},
	}
	for i := 0; i < 3; i++ {
		out = append(out,
			encoder{EncBase64, aligned(base64.StdEncoding.EncodeToString, i, 3, 4)},
			encoder{EncBase64URL, aligned(base64.URLEncoding.EncodeToString, i, 3, 4)})
	}
	for i := 0; i < 5; i++ {
		out = append(out, encoder{EncBase32, aligned(base32.StdEncoding.EncodeToString, i, 5, 8)})
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
