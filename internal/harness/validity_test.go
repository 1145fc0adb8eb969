package harness

import (
	"encoding/json"
	"math"
	"testing"
)

// TestDecodeTurnValidity pins the one decoder of turn_validity_seconds that the platform and the checks share.
func TestDecodeTurnValidity(t *testing.T) {
	cases := []struct {
		raw     string
		want    TurnValidity
		invalid bool
	}{
		{"", TurnValidity{}, false},
		{"null", TurnValidity{}, false},
		{" null ", TurnValidity{}, false},
		{"300", TurnValidity{Set: true, Seconds: 300}, false},
		{"0.5", TurnValidity{Set: true, Seconds: 0.5}, false},
		{"0", TurnValidity{Set: true, Problem: "is 0"}, true},
		{"-1", TurnValidity{Set: true, Problem: "is -1"}, true},
		{`"inf"`, TurnValidity{Set: true, Problem: "is inf"}, true},
		{`"-inf"`, TurnValidity{Set: true, Problem: "is -inf"}, true},
		{`"nan"`, TurnValidity{Set: true, Problem: "is nan"}, true},
		{"true", TurnValidity{Set: true, Problem: "is not a number"}, true},
		{"1e400", TurnValidity{Set: true, Problem: "is not a number"}, true},
	}
	for _, c := range cases {
		got := DecodeTurnValidity(json.RawMessage(c.raw))
		if got != c.want || got.Valid() == c.invalid && got.Set {
			t.Errorf("DecodeTurnValidity(%q) = %+v (valid %v), want %+v", c.raw, got, got.Valid(), c.want)
		}
	}
	if v := (*Result)(nil).Validity(); v.Set {
		t.Errorf("a nil result has a validity: %+v", v)
	}
	r := &Result{Type: KindMaterials, TurnValiditySeconds: json.RawMessage("240")}
	if v := r.Validity(); !v.Valid() || v.Seconds != 240 {
		t.Errorf("Result.Validity() = %+v, want 240 s", v)
	}
}

// FuzzDecodeTurnValidity: any bytes decode without a panic; a valid value is positive and finite, an
// invalid one says why, and an unset one carries nothing.
func FuzzDecodeTurnValidity(f *testing.F) {
	for _, s := range []string{"", "null", "300", "0", "-1", `"inf"`, `"nan"`, "true", "1e400", "{}", `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v := DecodeTurnValidity(raw)
		switch {
		case v.Valid():
			if v.Seconds <= 0 || math.IsInf(v.Seconds, 0) || math.IsNaN(v.Seconds) {
				t.Fatalf("%q: valid with %v seconds", raw, v.Seconds)
			}
		case v.Set:
			if v.Problem == "" || v.Seconds != 0 {
				t.Fatalf("%q: invalid without a problem: %+v", raw, v)
			}
		default:
			if v != (TurnValidity{}) {
				t.Fatalf("%q: unset with values: %+v", raw, v)
			}
		}
	})
}
