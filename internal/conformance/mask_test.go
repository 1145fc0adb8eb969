package conformance

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// prefixHunter finds the fixed prefixes every planted secret starts with, in every encoding the kit hunts:
// whatever canaries a run planted, an output that holds one in any of those forms holds its prefix.
func prefixHunter() *secrets.Set {
	s := &secrets.Set{}
	s.Add(CanaryPrefix, "a configuration canary")
	s.Add("astx_wid_", "a workload identity token")
	return s
}

func TestMaskResultMasksLocationsAndLeavesTheOriginal(t *testing.T) {
	canary := NewCanary()
	set := &secrets.Set{}
	set.Add(canary, "configuration field secrets.model_api_key")
	loc := &report.Location{Path: "/srv/" + canary + "/client.py", Line: 7}
	r := report.Result{Message: "m " + canary, DecidedOver: "over " + canary, Location: loc,
		Evidence: []report.Evidence{{Text: canary, Steps: []string{canary}, Location: loc, Callback: canary}}}
	got := maskResult(r, set)
	for _, text := range []string{got.Message, got.DecidedOver, got.Location.Path, got.Evidence[0].Text, got.Evidence[0].Steps[0], got.Evidence[0].Location.Path, got.Evidence[0].Callback} {
		if strings.Contains(text, canary) || !strings.Contains(text, secrets.Marker("raw")) {
			t.Errorf("not masked: %q", text)
		}
	}
	if loc.Path != "/srv/"+canary+"/client.py" || r.Evidence[0].Steps[0] != canary {
		t.Error("masking changed the unmasked result it was given (locations and steps are shared)")
	}
}

func TestCanariesDifferFromRunToRun(t *testing.T) {
	a, _ := plantCanaries(DefaultConfig(1), nil, NewCanary)
	b, _ := plantCanaries(DefaultConfig(1), nil, NewCanary)
	if len(a) != 2 || len(b) != 2 || a[0].Value == b[0].Value || a[1].Value == b[1].Value {
		t.Fatalf("two runs of seed 1 planted %v and %v", a, b)
	}
	for _, p := range a {
		if !strings.HasPrefix(p.Value, CanaryPrefix) || len(p.Value) != len(CanaryPrefix)+24 {
			t.Fatalf("canary %q", p.Value[:len(CanaryPrefix)])
		}
	}
}

// TestSecretLocationsAreMaskedInEveryFormat runs a provider whose log record and warning name secrets as
// their source files, and requires that no format shows one, while the report still points at the masked
// location (proof that the fixture put the secret there).
func TestSecretLocationsAreMaskedInEveryFormat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	seed := int64(3)
	render := func() map[string]string {
		rep, err := Run(context.Background(), Options{Project: "testdata/secret-locations", Python: "python3", Getenv: os.Getenv, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		masked := false
		for _, res := range rep.Results {
			if res.Check == "LEAK-LOG" && res.Status == report.StatusFailed && res.Location != nil && strings.Contains(res.Location.Path, "‹secret:") {
				masked = true
			}
		}
		if !masked {
			t.Fatal("LEAK-LOG did not fail at a masked location: the fixture did not put the token in a location")
		}
		split := false
		for _, res := range rep.Results {
			for _, e := range res.Evidence {
				if strings.Contains(e.Text, "configuration field secrets.client_secret") && strings.Contains(e.Text, "to stdout") {
					split = true
				}
			}
		}
		if !split {
			t.Error("the client secret printed in two writes was not found in stdout")
		}
		out := map[string]string{}
		for _, f := range report.Formats() {
			r, err := report.For(f, term.NewStyles(false), 100)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := r.Render(&b, rep); err != nil {
				t.Fatal(err)
			}
			out[f] = b.String()
		}
		return out
	}
	first, second := render(), render()
	hunt := prefixHunter()
	for f, text := range first {
		if m := hunt.FindString(text); len(m) > 0 {
			t.Errorf("%s output holds %s (%s)", f, m[0].Origin, m[0].Encoding)
		}
		if f == "json" && text != second[f] {
			t.Errorf("two runs of one seed differ in %s although their canaries differ only in value", f)
		}
	}
}

// TestNewLeakFormsAreMaskedInEveryFormat: a secret in one of the forms the hunt learnt in issue 25.5 (split
// across lines, split by spaces, upper-cased) is masked wherever a result carries text, in every report
// format: no piece of the value is left.
func TestNewLeakFormsAreMaskedInEveryFormat(t *testing.T) {
	canary := NewCanary()
	set := &secrets.Set{}
	set.Add(canary, "configuration field secrets.model_api_key")
	forms := []string{
		canary[:15] + "\n" + canary[15:],
		canary[:9] + " " + canary[9:],
		strings.ToUpper(canary),
	}
	rep := &report.Report{Seed: 1}
	for i, form := range forms {
		r := report.Result{Check: "LEAK-LOG", Title: "t", Area: "secrets", Severity: report.SeverityError, Status: report.StatusFailed,
			Message: "stdout was: " + form, Evidence: []report.Evidence{{Text: "evidence " + form, Steps: []string{form}}}}
		got := maskResult(r, set)
		if i == 0 && !strings.Contains(got.Message, secrets.Marker("raw, split across lines")) {
			t.Errorf("split form masked as %q", got.Message)
		}
		rep.Results = append(rep.Results, got)
	}
	rep.Summarize()
	pieces := []string{strings.ToLower(canary[len(CanaryPrefix) : len(CanaryPrefix)+8]), strings.ToLower(canary[len(canary)-8:])}
	for _, f := range report.Formats() {
		r, err := report.For(f, term.NewStyles(false), 100)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := r.Render(&b, rep); err != nil {
			t.Fatal(err)
		}
		low := strings.ToLower(b.String())
		for _, p := range pieces {
			if strings.Contains(low, p) {
				t.Errorf("%s output holds a piece of the canary (%q)", f, p)
			}
		}
	}
}
