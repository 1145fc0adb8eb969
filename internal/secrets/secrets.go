// Package secrets finds planted and returned secrets in text, in the encodings a provider is likely to leak
// them with (raw, JSON-escaped, URL-encoded, hex, base64 and URL-safe base64 at every alignment), and masks
// them so that the kit itself never prints one.
package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// MinLength is the shortest value treated as a secret: shorter values (a returned "1", say) would match
// everywhere and prove nothing.
const MinLength = 8

// Secret is one secret value and where it came from.
type Secret struct {
	Value  string
	Origin string
}

// Match is one place a secret was found.
type Match struct {
	Origin   string
	Encoding string
	// Offset is the byte offset of the match in the searched text.
	Offset int
}

type needle struct {
	b        []byte
	origin   string
	encoding string
}

// Set is a set of secrets and their encoded forms. The zero value is empty and ready to use. It is safe for
// concurrent use.
type Set struct {
	mu      sync.RWMutex
	seen    map[string]bool
	needles []needle
	sorted  bool
}

// Add adds a secret; values shorter than MinLength are ignored. It reports whether the value was added.
func (s *Set) Add(value, origin string) bool {
	if len(value) < MinLength {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[value] {
		return false
	}
	s.seen[value] = true
	for _, n := range encodings(value) {
		s.needles = append(s.needles, needle{b: []byte(n.text), origin: origin, encoding: n.name})
	}
	s.sorted = false
	return true
}

// Len is the number of secrets in the set.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.seen)
}

type encoded struct{ name, text string }

// encodings lists the forms of a value to search for, without duplicates.
func encodings(v string) []encoded {
	var out []encoded
	seen := map[string]bool{}
	add := func(name, text string) {
		if len(text) < MinLength/2 || seen[text] {
			return
		}
		seen[text] = true
		out = append(out, encoded{name, text})
	}
	add("raw", v)
	if j, err := json.Marshal(v); err == nil {
		add("json-escaped", string(j[1:len(j)-1]))
	}
	q := url.QueryEscape(v)
	add("url-encoded", q)
	add("url-encoded", strings.ReplaceAll(q, "+", "%20"))
	add("url-encoded", lowerHexEscapes(q))
	add("url-encoded", url.PathEscape(v))
	add("hex", hex.EncodeToString([]byte(v)))
	add("hex", strings.ToUpper(hex.EncodeToString([]byte(v))))
	n := len(v)
	for i := 0; i < 3; i++ {
		src := append(bytes.Repeat([]byte{0}, i), v...)
		start := (8*i + 5) / 6 // ceil(8i/6)
		end := (8 * (i + n)) / 6
		std := base64.StdEncoding.EncodeToString(src)
		urlsafe := base64.URLEncoding.EncodeToString(src)
		if end > start && end <= len(std) {
			add("base64", std[start:end])
			add("base64url", urlsafe[start:end])
		}
	}
	return out
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

func (s *Set) prepare() []needle {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.sorted {
		// Longest first, so that masking replaces the widest match.
		sort.SliceStable(s.needles, func(i, j int) bool { return len(s.needles[i].b) > len(s.needles[j].b) })
		s.sorted = true
	}
	return s.needles
}

// Find returns every secret found in text, at most one match per secret and encoding.
func (s *Set) Find(text []byte) []Match {
	if len(text) == 0 {
		return nil
	}
	var out []Match
	for _, n := range s.prepare() {
		if i := bytes.Index(text, n.b); i >= 0 {
			out = append(out, Match{Origin: n.origin, Encoding: n.encoding, Offset: i})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

// FindString is Find for strings.
func (s *Set) FindString(text string) []Match { return s.Find([]byte(text)) }

// Mask replaces every occurrence of every secret, in every encoding, with a marker that says which
// encoding was there but never the value.
func (s *Set) Mask(text string) string {
	if text == "" {
		return text
	}
	for _, n := range s.prepare() {
		if strings.Contains(text, string(n.b)) {
			text = strings.ReplaceAll(text, string(n.b), "‹secret:"+n.encoding+"›")
		}
	}
	return text
}

// MaskValue masks every string inside a JSON-like value (maps, slices, strings), returning a copy.
func (s *Set) MaskValue(v any) any {
	switch t := v.(type) {
	case string:
		return s.Mask(t)
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[s.Mask(k)] = s.MaskValue(x)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = s.MaskValue(x)
		}
		return out
	default:
		return v
	}
}

// MaskJSON masks every secret in a JSON document by decoding it, masking its strings and encoding it again;
// text that is not JSON is masked as text.
func (s *Set) MaskJSON(doc []byte) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return []byte(s.Mask(string(doc)))
	}
	out, err := json.MarshalIndent(s.MaskValue(v), "", "  ")
	if err != nil {
		return []byte(s.Mask(string(doc)))
	}
	// A secret can still hide in a form the decoder normalised (escapes): mask the text as well.
	return []byte(s.Mask(string(out)))
}
