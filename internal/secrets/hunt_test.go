package secrets

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/url"
	"strings"
	"testing"
)

// TestEncodersArePrefixCompatible proves what the index relies on: the encoding of a value's first bytes (cut
// where a UTF-8 sequence starts) is a prefix of the value's encoding, for every encoder, over ASCII,
// multi-byte, astral and invalid UTF-8 values.
func TestEncodersArePrefixCompatible(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	alphabet := []string{"a", "Z", "/", "+", "=", " ", "%", "\"", "\\", "\n", "\x01", "é", "€", "😀", "\xff", "\xc3", "<", "&"}
	for n := 0; n < 300; n++ {
		var b strings.Builder
		for b.Len() < 10+rng.Intn(120) {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		v := b.String()
		for cut := 1; cut < len(v); cut += 1 + rng.Intn(7) {
			c := prefixCut(v, cut)
			for _, e := range encoders {
				whole, part := e.enc(v), e.enc(v[:c])
				if !strings.HasPrefix(whole, part) {
					t.Fatalf("%s of %q cut at %d: %q is not a prefix of %q", e.name, v, c, part, whole)
				}
			}
		}
	}
}

// careless is how careless providers write a secret: each form is one a real library produces.
func careless(v string) map[string]string {
	py, _ := json.Marshal(v)
	return map[string]string{
		"raw":                 "token=" + v,
		"go json":             string(py),
		"python json ascii":   `{"k": "` + pyJSON(v, true) + `"}`,
		"query":               "https://x.example/?t=" + url.QueryEscape(v),
		"query twice":         "https://x.example/?next=" + url.QueryEscape("https://y.example/?t="+url.QueryEscape(v)),
		"path":                "https://x.example/" + url.PathEscape(v),
		"hex":                 "dump " + hex.EncodeToString([]byte(v)),
		"HEX":                 "dump " + strings.ToUpper(hex.EncodeToString([]byte(v))),
		"base64":              base64.StdEncoding.EncodeToString([]byte("Bearer:" + v)),
		"base64 unpadded":     base64.RawStdEncoding.EncodeToString([]byte("xy" + v)),
		"base64url":           base64.URLEncoding.EncodeToString([]byte(v + "!")),
		"base64url unpadded":  base64.RawURLEncoding.EncodeToString([]byte("x" + v)),
		"base32":              base32.StdEncoding.EncodeToString([]byte("abc" + v)),
		"base32 unpadded":     base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte("a" + v)),
		"basic auth in a URL": "https://user:" + url.QueryEscape(v) + "@x.example/",
	}
}

func TestFindsEveryCarelessForm(t *testing.T) {
	values := []string{
		canary,
		"astx_canary_0123456789abcdef01234567",
		"pässwörd-€-😀-long enough",
		strings.Repeat("long material line with / + = and spaces\n", 5_000), // 200 KB: a long secret, several pieces
	}
	for _, v := range values {
		var s Set
		s.Add(v, "the origin")
		for form, text := range careless(v) {
			m := s.FindString(text)
			if len(m) == 0 || m[0].Origin != "the origin" {
				t.Errorf("%.20q: %s not found (%v)", v, form, m)
				continue
			}
			masked := s.Mask(text)
			if len(s.FindString(masked)) != 0 || len(masked) > len(text) && len(v) > 100 {
				t.Errorf("%.20q: %s still found after masking (%d bytes left)", v, form, len(masked))
			}
		}
	}
}

func TestFindDoesNotMatchAPartOfALongSecret(t *testing.T) {
	v := strings.Repeat("0123456789", 1000)
	var s Set
	s.Add(v, "long")
	if m := s.FindString("x" + v[:len(v)-1]); len(m) != 0 {
		t.Fatalf("a truncated copy matched: %+v", m)
	}
	if m := s.FindString("x" + v + "y"); len(m) != 1 || m[0].Offset != 1 || m[0].Encoding != "raw" {
		t.Fatalf("the whole copy: %+v", m)
	}
}

func TestMaskOverlappingSecretsLeavesNoPart(t *testing.T) {
	var s Set
	a, b := "AAAAAAAABBBBBBBB", "BBBBBBBBCCCCCCCCCCCC"
	s.Add(a, "a")
	s.Add(b, "b")
	text := "<AAAAAAAABBBBBBBBCCCCCCCCCCCC>"
	got := s.Mask(text)
	if got != "<"+Marker("raw")+">" {
		t.Fatalf("overlapping secrets masked as %q", got)
	}
	if strings.Contains(got, "BBBB") || strings.Contains(got, "CCCC") {
		t.Fatalf("a part of a secret survived: %q", got)
	}
}

func TestManySecretsAndCap(t *testing.T) {
	defer func(n int) { maxSecrets = n }(maxSecrets)
	maxSecrets = 1000
	var s Set
	for i := 0; i < 1500; i++ {
		s.Add(fmt.Sprintf("material-%06d-xyz", i), fmt.Sprintf("file %d", i))
	}
	if s.Len() != 1000 || s.Dropped() != 500 {
		t.Fatalf("len %d dropped %d, want 1000 and 500", s.Len(), s.Dropped())
	}
	m := s.FindString("a b material-000999-xyz c")
	if len(m) != 1 || m[0].Origin != "file 999" || m[0].Offset != 4 {
		t.Fatalf("find among many: %+v", m)
	}
	if m := s.FindString("material-001000-xyz"); len(m) != 0 {
		t.Fatalf("a value past the cap is hunted: %+v", m)
	}
}

func TestFindBytesAndConcurrentAdd(t *testing.T) {
	var s Set
	s.Add(canary, "c")
	done := make(chan bool)
	go func() {
		for i := 0; i < 200; i++ {
			s.Add(fmt.Sprintf("another-secret-%d", i), "o")
		}
		done <- true
	}()
	for i := 0; i < 200; i++ {
		if len(s.Find(append([]byte("x"), canary...))) == 0 {
			t.Fatal("lost the canary while another goroutine added secrets")
		}
	}
	<-done
	if !bytes.Contains(s.MaskJSON([]byte(`{"a":"another-secret-199"}`)), []byte(Marker("raw"))) {
		t.Fatal("MaskJSON missed a secret added last")
	}
}

// TestPeriodicLongSecretStaysLinear feeds texts that make a naive confirmation quadratic: a long periodic
// material (a zero-filled file), the text holding it twice over, or all of it but its last byte followed by
// other bytes, so that the form's first bytes match at every position. Each finishes in one pass (a quadratic
// search would not finish within the test binary's timeout).
func TestPeriodicLongSecretStaysLinear(t *testing.T) {
	v := strings.Repeat("\x00", 1<<20)
	var s Set
	s.Add(v, "zero-filled file")
	if m := s.FindString(v + v); len(m) != 1 || m[0].Offset != 0 {
		t.Fatalf("twice over: %+v", m)
	}
	if got := s.Mask(v + v); got != Marker("raw")+Marker("raw") {
		t.Fatalf("twice over masked to %d bytes", len(got))
	}
	if m := s.FindString(v[1:] + strings.Repeat("X", 1<<20)); len(m) != 0 {
		t.Fatalf("all but one byte matched: %+v", m)
	}
	hexed := strings.Repeat("0", 2<<20)
	if m := s.FindString(hexed[2:] + "zz" + hexed); len(m) != 1 || m[0].Encoding != "hex" || m[0].Offset != len(hexed) {
		t.Fatalf("hex: %+v", m)
	}
}

// TestMaskedBlobIsTheSameForEveryCanary proves that masking a secret inside a base64 or base32 blob leaves
// nothing that depends on the secret: two different secrets of one length, at every alignment, mask to the
// same text.
func TestMaskedBlobIsTheSameForEveryCanary(t *testing.T) {
	a, b := "astx_canary_00112233445566778899aabb", "astx_canary_ffeeddccbbaa998877665544"
	for pre := 0; pre < 5; pre++ {
		for _, enc := range []func([]byte) string{base64.StdEncoding.EncodeToString, base64.RawURLEncoding.EncodeToString, base32.StdEncoding.EncodeToString} {
			var sa, sb Set
			sa.Add(a, "x")
			sb.Add(b, "x")
			blob := func(v string) string { return enc([]byte(strings.Repeat("p", pre) + v + "suffix")) }
			ma, mb := sa.Mask(blob(a)), sb.Mask(blob(b))
			if ma != mb {
				t.Errorf("prefix %d: masked blobs differ: %q and %q", pre, ma, mb)
			}
			if !strings.Contains(ma, strings.TrimSuffix(Marker("base"), "›")) {
				t.Errorf("prefix %d: not masked: %q", pre, ma)
			}
		}
	}
}

// TestManyLongSecretsInOneTextStayLinear puts 20,000 long materials (200 bytes each) into one 4 MB text, as
// the JSON of a long history holds them: each must be found and masked, in work linear in the text (one pass
// over the text per long secret would not finish within the test binary's timeout).
func TestManyLongSecretsInOneTextStayLinear(t *testing.T) {
	var s Set
	var b strings.Builder
	rng := rand.New(rand.NewSource(3))
	for i := 0; i < 20000; i++ {
		v := fmt.Sprintf("material %06d ", i) + strings.Repeat(fmt.Sprintf("%016x", rng.Uint64()), 12)[:180]
		s.Add(v, fmt.Sprintf("file %d", i))
		b.WriteString(`{"content":"` + v + `"},`)
	}
	masked := s.Mask(b.String())
	if n := strings.Count(masked, Marker("raw")); n != 20000 {
		t.Fatalf("%d of 20000 materials masked", n)
	}
}
