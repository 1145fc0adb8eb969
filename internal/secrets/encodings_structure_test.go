package secrets

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
)

// encodingConstants reads the Encoding constants from encodings.go's own source, so that a constant added
// there is held to the tests below without being listed anywhere else.
func encodingConstants(t *testing.T) []Encoding {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "encodings.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Encoding
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Encoding" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, Encoding(s))
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no Encoding constant found in encodings.go")
	}
	return out
}

// aForm writes value in the named encoding as a careless provider would, inside some other text. A new
// Encoding constant needs its case here: the test below says so.
func aForm(e Encoding, v string) (string, bool) {
	switch e {
	case EncRaw:
		return "token=" + v, true
	case EncJSON:
		b, _ := json.Marshal(map[string]string{"k": v + "\n"})
		return string(b), true
	case EncURL:
		return "https://x.example/?t=" + url.QueryEscape(v+" !"), true
	case EncURLTwice:
		return "https://x.example/?next=" + url.QueryEscape("https://y.example/?t="+url.QueryEscape(v+" !")), true
	case EncHex:
		return "dump " + hex.EncodeToString([]byte(v)), true
	case EncBase64:
		return base64.StdEncoding.EncodeToString([]byte("Bearer:" + v + "+?>")), true
	case EncBase64URL:
		return base64.URLEncoding.EncodeToString([]byte(v + "?>~")), true
	case EncBase32:
		return base32.StdEncoding.EncodeToString([]byte("abc" + v)), true
	case EncCase:
		return "key=" + strings.ToUpper(v), true
	}
	return "", false
}

// TestEveryEncodingIsHuntedAndNamed is the guide for adding a secret encoding: every Encoding constant has
// an encoder in encoders, a value written in that form is found and labelled with it (not as another form),
// masking leaves nothing of it, and docs/configuration.md's list of hunted forms names it.
func TestEveryEncodingIsHuntedAndNamed(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	hunted := map[Encoding]bool{}
	for _, e := range encoders {
		hunted[e.name] = true
	}
	for _, e := range encodingConstants(t) {
		// A value whose every form differs from the others (escapes, non-ASCII, base64's "+/" against "-_"),
		// except for the case-changed form, hunted only for values written like tokens.
		v := "pässwörd/€+~ \"<ÿÿÿ? long enough"
		if e == EncCase {
			v = "astx_canary_0123456789abcdef01234567"
		}
		if !hunted[e] {
			t.Errorf("Encoding %q has no encoder: add one to encoders in encodings.go (prefix-compatible, see TestEncodersArePrefixCompatible)", e)
			continue
		}
		text, ok := aForm(e, v)
		if !ok {
			t.Errorf("Encoding %q has no case in aForm (encodings_structure_test.go): write the value there as a provider would in that form", e)
			continue
		}
		var s Set
		s.Add(v, "the origin")
		m := s.FindString(text)
		if len(m) == 0 {
			t.Errorf("%q: the value written in that form (%q) is not found", e, text)
			continue
		}
		if Encoding(m[0].Encoding) != e {
			t.Errorf("%q: the value written in that form is labelled %q", e, m[0].Encoding)
		}
		if len(s.FindString(s.Mask(text))) != 0 {
			t.Errorf("%q: still found after masking", e)
		}
		if !strings.Contains(string(doc), "`"+string(e)+"`") && !strings.Contains(string(doc), "- "+string(e)) {
			t.Errorf("docs/configuration.md (\"The forms a leaked secret is hunted in\") does not name the %q form", e)
		}
	}
}
