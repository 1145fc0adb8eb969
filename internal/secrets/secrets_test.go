package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

const canary = "astx_canary_Zq9/+x==7Hk2"

func TestFindEveryEncoding(t *testing.T) {
	var s Set
	s.Add(canary, "config secrets.model_api_key")
	cases := map[string]string{
		"raw":          "token=" + canary,
		"json-escaped": func() string { b, _ := json.Marshal(map[string]string{"t": canary}); return string(b) }(),
		"url-encoded":  "https://x.example/?t=" + url.QueryEscape(canary),
		"hex":          "dump " + hex.EncodeToString([]byte(canary)),
	}
	for want, text := range cases {
		m := s.FindString(text)
		if len(m) == 0 {
			t.Errorf("%s: not found in %q", want, text)
			continue
		}
		if m[0].Origin != "config secrets.model_api_key" {
			t.Errorf("%s: origin %q", want, m[0].Origin)
		}
	}
	// base64 at every alignment, embedded in a larger blob.
	for pre := 0; pre < 6; pre++ {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			blob := enc.EncodeToString([]byte(strings.Repeat("p", pre) + canary + "suffix"))
			if len(s.FindString(blob)) == 0 {
				t.Errorf("base64 with %d prefix bytes not found: %s", pre, blob)
			}
		}
	}
}

func TestNoFalsePositive(t *testing.T) {
	var s Set
	s.Add(canary, "x")
	if m := s.FindString("nothing secret here: astx_canary_ but not the rest"); len(m) != 0 {
		t.Fatalf("unexpected match %+v", m)
	}
	if s.Add("short", "y") {
		t.Fatal("a value shorter than MinLength was added")
	}
}

func TestMaskRemovesEveryForm(t *testing.T) {
	var s Set
	s.Add(canary, "x")
	text := "a " + canary + " b " + url.QueryEscape(canary) + " c " + base64.StdEncoding.EncodeToString([]byte(canary))
	masked := s.Mask(text)
	if len(s.FindString(masked)) != 0 {
		t.Fatalf("masked text still holds the secret: %s", masked)
	}
	if !strings.Contains(masked, Marker("raw")) || !strings.Contains(masked, Marker("url-encoded")) {
		t.Fatalf("mask markers missing: %s", masked)
	}
	doc := s.MaskJSON([]byte(`{"k": "` + canary + `", "list": ["` + canary + `"]}`))
	if strings.Contains(string(doc), canary) {
		t.Fatalf("MaskJSON left the secret: %s", doc)
	}
}

// TestMatchCarriesKindAndID: a match says which secret it found by the secret's number in its set (the order
// of the secrets added) and its kind, so that no caller keys anything by the display origin.
func TestMatchCarriesKindAndID(t *testing.T) {
	var s Set
	if !s.AddSecret(Secret{Value: "first-secret-1", Origin: "one", Kind: KindCredential}) {
		t.Fatal("first not added")
	}
	if s.AddSecret(Secret{Value: "short", Origin: "too short"}) || s.AddSecret(Secret{Value: "first-secret-1", Origin: "again"}) {
		t.Fatal("a short or repeated value was added")
	}
	if !s.Add("second-secret-2", "two") {
		t.Fatal("second not added")
	}
	m := s.FindString("a second-secret-2 and first-secret-1")
	if len(m) != 2 {
		t.Fatalf("want two matches, got %+v", m)
	}
	byOrigin := map[string]Match{}
	for _, x := range m {
		byOrigin[x.Origin] = x
	}
	if x := byOrigin["one"]; x.ID != 0 || x.Kind != KindCredential {
		t.Errorf("first: %+v", x)
	}
	if x := byOrigin["two"]; x.ID != 1 || x.Kind != KindOther {
		t.Errorf("second: %+v", x)
	}
	if !KindWorkloadToken.Handed() || !KindConfigField.Handed() || KindCredential.Handed() || KindServiceValue.Handed() || KindOther.Handed() {
		t.Error("Handed is wrong")
	}
}
