package secrets

import (
	"encoding/base32"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// TestFindsSplitAndRecasedForms holds the forms careless providers print that the hunt used to miss (issue
// 25.5): a secret in two halves on two lines or two writes, upper-cased, lower-cased base32, one character
// at a time with spaces. Each must be found with a label that says how, and masked so that no piece is left.
func TestFindsSplitAndRecasedForms(t *testing.T) {
	const canary = "astx_canary_0123456789abcdef01234567"
	const token = "tok_JBSWY3DPEHPK3PXPJBSWY3DP"
	cases := []struct {
		name, value, text, want string
	}{
		{"two print calls", canary, "debug key " + canary[:14] + "\n" + canary[14:] + "\nnext line", "raw, split across lines"},
		{"two writes without a newline, CRLF", canary, "part one: " + canary[:20] + "\r\n" + canary[20:], "raw, split across lines"},
		{"print(a, b)", canary, "key " + canary[:10] + " " + canary[10:] + " done", "raw, split by spaces"},
		{"one character at a time", canary, strings.Join(strings.Split(canary, ""), " "), "raw, split by spaces"},
		{"upper-cased hex key", canary, "KEY=" + strings.ToUpper(canary), "case-changed"},
		{"upper-cased token", token, "token " + strings.ToUpper(token), "case-changed"},
		{"lower-cased base32", canary, "b32 " + strings.ToLower(base32.StdEncoding.EncodeToString([]byte(canary))), "base32"},
		{"upper-cased and split", canary, strings.ToUpper(canary[:16]) + "\n" + strings.ToUpper(canary[16:]), "case-changed, split across lines"},
		{"in a URL query", canary, "GET https://x.example/cb?key=" + url.QueryEscape(canary) + "&next=1", "url-encoded"},
		{"at the end of a URL query", canary, "redirect to https://x.example/cb?state=1&key=" + canary, "url-encoded"},
		{"in a JSON document", canary, mustJSON(map[string]string{"api_key": canary}), "json-escaped"},
		{"in an indented JSON list", canary, "[\n  \"" + canary + "\"\n]", "json-escaped"},
		{"plain", canary, "key: " + canary, "raw"},
		{"quoted, not JSON", canary, "key=\"" + canary + "\"", "raw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s Set
			s.Add(c.value, "the key")
			m := s.FindString(c.text)
			if len(m) == 0 {
				t.Fatalf("not found in %q", c.text)
			}
			if m[0].Encoding != c.want {
				t.Errorf("labelled %q, want %q (all: %+v)", m[0].Encoding, c.want, m)
			}
			masked := s.Mask(c.text)
			if !strings.Contains(masked, Marker(c.want)) {
				t.Errorf("masked text %q lacks the marker %q", masked, Marker(c.want))
			}
			if left := s.FindString(masked); len(left) != 0 {
				t.Errorf("masked text %q still holds the key: %+v", masked, left)
			}
			for _, piece := range []string{c.value[:12], c.value[len(c.value)-12:]} {
				if strings.Contains(strings.ToLower(masked), strings.ToLower(piece)) {
					t.Errorf("masked text %q still holds the piece %q", masked, piece)
				}
			}
		})
	}
}

// TestSplitHuntKeepsOrdinaryText: removing whitespace must not invent leaks, nor move the offsets of the forms
// found whole.
func TestSplitHuntKeepsOrdinaryText(t *testing.T) {
	var s Set
	s.Add("correct horse battery", "a passphrase with spaces")
	s.Add("astx_canary_0123456789abcdef01234567", "the key")
	text := "the report says correct horse battery staple\nand astx_canary_0123456789abcdef01234567 here"
	m := s.FindString(text)
	if len(m) != 2 || m[0].Encoding != "raw" || m[1].Encoding != "raw" {
		t.Fatalf("want two raw matches, got %+v", m)
	}
	if m[0].Offset != strings.Index(text, "correct") || m[1].Offset != strings.Index(text, "astx") {
		t.Errorf("offsets moved: %+v", m)
	}
	if got := s.FindString("a b c d e f g h i j k l m n o p q r s t u v w x y z\nplain words only"); len(got) != 0 {
		t.Errorf("ordinary text: %+v", got)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
