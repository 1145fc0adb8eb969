package conformance

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
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

func TestMaskReportMasksLocationsAndLeavesTheOriginal(t *testing.T) {
	canary := NewCanary()
	set := &secrets.Set{}
	set.Add(canary, "configuration field secrets.model_api_key")
	loc := &report.Location{Path: "/srv/" + canary + "/client.py", Line: 7}
	r := report.Result{Message: "m " + canary, DecidedOver: "over " + canary, Location: loc,
		Evidence: []report.Evidence{{Text: canary, Steps: []string{canary}, Location: loc, Callback: canary}}}
	rep, err := maskReport(&report.Report{Results: []report.Result{r}}, set)
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Results[0]
	for _, text := range []string{got.Message, got.DecidedOver, got.Location.Path, got.Evidence[0].Text, got.Evidence[0].Steps[0], got.Evidence[0].Location.Path, got.Evidence[0].Callback} {
		if strings.Contains(text, canary) || !strings.Contains(text, secrets.Marker("raw")) {
			t.Errorf("not masked: %q", text)
		}
	}
	if loc.Path != "/srv/"+canary+"/client.py" || r.Evidence[0].Steps[0] != canary {
		t.Error("masking changed the unmasked result it was given (locations and steps are shared)")
	}
}

// fillStrings sets every string reachable from v (struct fields, one element of every slice and map, what
// every pointer points at) to text, naming no field: a field added to the report later is filled too.
func fillStrings(v reflect.Value, text string, depth int) {
	if depth > 8 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(text + " " + v.Type().String())
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillStrings(v.Elem(), text, depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillStrings(v.Field(i), text, depth+1)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillStrings(v.Index(0), text, depth+1)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fillStrings(v.Index(i), text, depth+1)
		}
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillStrings(k, text, depth+1)
		fillStrings(e, text, depth+1)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	}
}

// TestEveryStringOfTheReportIsMasked fills every string of a report, found by reflection (a field added to
// any report type later is filled without this test naming it), with a canary, and requires the masked
// report to hold no form of it, in its JSON and in every report format.
func TestEveryStringOfTheReportIsMasked(t *testing.T) {
	canary := NewCanary()
	set := &secrets.Set{}
	set.Add(canary, "configuration field secrets.model_api_key")
	var rep report.Report
	fillStrings(reflect.ValueOf(&rep).Elem(), canary, 0)
	rep.Results[0].Status = report.StatusFailed
	rep.Results[0].Severity = report.SeverityError
	raw, _ := json.Marshal(rep)
	if !strings.Contains(string(raw), canary) {
		t.Fatal("the filled report holds no canary: the test proves nothing")
	}
	masked, err := maskReport(&rep, set)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(masked)
	if err != nil {
		t.Fatal(err)
	}
	hunt := prefixHunter()
	if m := hunt.FindString(string(doc)); len(m) > 0 {
		t.Fatalf("the masked report holds %s (%s): %s", m[0].Origin, m[0].Encoding, doc)
	}
	for _, f := range report.Formats() {
		r, err := report.For(f, term.NewStyles(false), 100)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := r.Render(&b, masked); err != nil {
			t.Fatal(err)
		}
		if m := hunt.FindString(b.String()); len(m) > 0 {
			t.Errorf("%s output holds %s (%s)", f, m[0].Origin, m[0].Encoding)
		}
	}
}

// futureResult stands for a report type that grows a string field nobody added to any masking code.
type futureResult struct {
	report.Result
	Remedy   string
	Extra    map[string][]string
	Attached any
}

func TestAStringFieldAddedLaterIsMasked(t *testing.T) {
	canary := NewCanary()
	set := &secrets.Set{}
	set.Add(canary, "configuration field secrets.model_api_key")
	in := []futureResult{{Result: report.Result{Message: canary}, Remedy: "rotate " + canary,
		Extra: map[string][]string{"k": {canary}}, Attached: &report.Location{Path: canary}}}
	out, err := secrets.Masked(set, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{out[0].Message, out[0].Remedy, out[0].Extra["k"][0], out[0].Attached.(*report.Location).Path} {
		if !secrets.HasMarker(text) || strings.Contains(text, canary) {
			t.Errorf("not masked: %q", text)
		}
	}
}

// TestMaskReportFailsClosed: a result type holding what the walker does not know is an error, not an
// unmasked report.
func TestMaskReportFailsClosed(t *testing.T) {
	set := &secrets.Set{}
	set.Add(NewCanary(), "configuration field secrets.model_api_key")
	type hooked struct {
		report.Result
		Render func() string
	}
	if _, err := secrets.Masked(set, []hooked{{}}); err == nil {
		t.Fatal("a result with a func field was masked without an error")
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
			if res.Check == "LEAK-LOG" && res.Status == report.StatusFailed && res.Location != nil && secrets.HasMarker(res.Location.Path) {
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
		masked, err := maskReport(&report.Report{Results: []report.Result{r}}, set)
		if err != nil {
			t.Fatal(err)
		}
		got := masked.Results[0]
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

// mustDecide is Decide for tests: a report the walker cannot mask fails the test.
func mustDecide(t testing.TB, ev *Evidence, tg *Target, seed int64, o Options) *report.Report {
	t.Helper()
	rep, err := Decide(ev, tg, seed, o)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestRunErrorsAreMaskedWithTheRunsSecrets: an error a run returns after planting its canaries is masked
// with that run's own set (no set is held process-wide), raw and encoded, and stays an UndecidedError
// (exit code 2) whose cause errors.Is still finds.
func TestRunErrorsAreMaskedWithTheRunsSecrets(t *testing.T) {
	env := &Env{planted: []secrets.Secret{{Value: NewCanary(), Origin: "configuration field secrets.model_api_key"}}}
	canary := env.planted[0].Value
	cause := errors.New("replica r2 did not load: KeyError " + canary + " / " + hex.EncodeToString([]byte(canary)))
	err := maskError(env.Secrets(), undecided(fmt.Errorf("run the suite: %w", cause)))
	if m := prefixHunter().FindString(err.Error()); len(m) > 0 {
		t.Fatalf("the run's error holds %s (%s): %s", m[0].Origin, m[0].Encoding, err)
	}
	if !strings.Contains(err.Error(), secrets.Marker("raw")) || !strings.Contains(err.Error(), secrets.Marker("hex")) {
		t.Errorf("error text %q", err)
	}
	var u *UndecidedError
	if !errors.As(err, &u) || u.ExitCode() != 2 || !errors.Is(err, cause) {
		t.Errorf("the masked error lost its type or cause: %#v", err)
	}
	if other := (&Env{planted: []secrets.Secret{{Value: NewCanary(), Origin: "x"}}}).Secrets(); other.Len() != 1 || len(other.FindString(canary)) > 0 {
		t.Error("another run's set holds this run's canary")
	}
	if maskError(env.Secrets(), nil) != nil {
		t.Error("no error became an error")
	}
}

// TestOptionsHoldNoHookIntoTheRun: the caller owns a run's lifetime (Open, Suite, Close): no option is a
// function the run would call with its report, environment or workers to change them in place (the former
// After hook). Only plain callbacks of the recorded-evidence tests are allowed, by name.
func TestOptionsHoldNoHookIntoTheRun(t *testing.T) {
	allowed := map[string]bool{"Getenv": true, "LookPath": true, "recordEvidence": true}
	typ := reflect.TypeOf(Options{})
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if f.Type.Kind() == reflect.Func && !allowed[f.Name] {
			t.Errorf("Options.%s is a hook into the run (%s): let the caller compose the step after Open/Suite instead", f.Name, f.Type)
		}
	}
}
