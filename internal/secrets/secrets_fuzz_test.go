package secrets

import (
	"strings"
	"testing"
)

// FuzzHuntAndMask plants a value in arbitrary text in every form the set hunts, whole and split in two by a
// line break: each must be found, and no form may survive masking; arbitrary text alone is searched and
// masked without a panic.
func FuzzHuntAndMask(f *testing.F) {
	f.Add("astx_canary_0123456789abcdef01234567", "log: ", uint8(0))
	f.Add("pässwörd-€-😀-long enough", "\x00\xff{\"k\":", uint8(2))
	f.Add(strings.Repeat("ab", 100), strings.Repeat("ab", 150), uint8(9))
	f.Fuzz(func(t *testing.T, value, text string, which uint8) {
		if len(value) > 4<<10 || len(text) > 16<<10 {
			return
		}
		var s Set
		_ = s.Mask(text)
		_ = s.FindString(text)
		if !s.Add(value, "v") {
			return
		}
		e := encoders[int(which)%len(encoders)]
		form := e.enc(value)
		if len(form) < minNeedle {
			return
		}
		planted := text + form + text
		if len(s.FindString(planted)) == 0 {
			t.Fatalf("%s form %q of %q not found in %q", e.name, form, value, planted)
		}
		masked := s.Mask(planted)
		if strings.Contains(masked, form) {
			t.Fatalf("%s form survived masking: %q", e.name, masked)
		}
		if len(s.FindString(masked)) != 0 && !strings.Contains(text, "‹") {
			t.Fatalf("masked text still holds the value: %q", masked)
		}
		if strings.ContainsAny(form, " \t\n\r\v\f") {
			return // a form with whitespace of its own is hunted whole only
		}
		cut := 1 + int(which)%(len(form)-1)
		split := text + "\n" + form[:cut] + "\n" + form[cut:] + "\n" + text
		if len(s.FindString(split)) == 0 {
			t.Fatalf("%s form %q of %q split at %d not found in %q", e.name, form, value, cut, split)
		}
		if masked := s.Mask(split); len(s.FindString(masked)) != 0 && !strings.Contains(text, "‹") {
			t.Fatalf("masked split text still holds the value: %q", masked)
		}
	})
}
