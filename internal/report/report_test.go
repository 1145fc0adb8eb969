package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/astrabox-dev/astrabox/internal/term"
)

var ansiSeq = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

func render(t *testing.T, format string, s term.Styles, width int, r *Report) string {
	t.Helper()
	rd, err := For(format, s, width)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rd.Render(&b, r); err != nil {
		t.Fatalf("render %s: %v", format, err)
	}
	return b.String()
}

func TestForFormats(t *testing.T) {
	for _, f := range Formats() {
		if _, err := For(f, term.NewStyles(false), 80); err != nil {
			t.Errorf("For(%q): %v", f, err)
		}
	}
	_, err := For("xml", term.NewStyles(false), 80)
	if err == nil {
		t.Fatal("unknown format accepted")
	}
	for _, f := range Formats() {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not list %q", err, f)
		}
	}
	for _, f := range Formats() {
		rd, _ := For(f, term.NewStyles(false), 80)
		if err := renderNil(rd); err == nil {
			t.Errorf("%s renders a nil report without error", f)
		} else if strings.HasPrefix(err.Error(), "panic") {
			t.Errorf("%s: %v; Render must refuse a nil report with an error (render FORMAT: no report) and write nothing (see Renderer)", f, err)
		}
	}
}

// renderNil renders a nil report with rd, turning a panic into an error that says so.
func renderNil(rd Renderer) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic rendering a nil report: %v", p)
		}
	}()
	return rd.Render(&bytes.Buffer{}, nil)
}

func TestTextPlainFitsAndHasContent(t *testing.T) {
	for _, width := range []int{80, 40, 120} {
		out := render(t, "text", term.NewStyles(false), width, sample())
		if strings.Contains(out, "\x1b") {
			t.Fatalf("width %d: escape byte in plain output:\n%s", width, out)
		}
		for i, ln := range strings.Split(out, "\n") {
			if w := runewidth.StringWidth(ln); w > width {
				t.Errorf("width %d: line %d is %d columns: %q", width, i+1, w, ln)
			}
		}
	}
	out := render(t, "text", term.NewStyles(false), 80, sample())
	for _, want := range []string{
		"FAIL   SESSION-NAMES  Returned file names are safe basenames",
		"clauses: SESSION-NAMES, SESSION-FILE-PATH",
		"at src/acme_provider/provider.py:42, replica r1, callback",
		"scenario cold-start",
		"3. prepare_session(s1) on replica r1",
		"hint: Return bare names and build paths with context.file_path(name).",
		"FLAKY  SYNC-SKIP-UNCHANGED  Unchanged inputs cause no external writes",
		"WARN   SYNC-NO-LOG-CONFIG  Trusted configuration is never logged",
		"SKIP   RECOVER-NO-FENCE-NEWER  Recovering never fences a newer operation",
		"reason: the provider does not override recover",
		"PASS   EP-GROUP, EP-NAME",
		`\x1b[31mwrote`, // the provider's escape sequence made visible, not interpreted
		"provider: acme-cloud",
		"FAILED: 2 checks failed, 1 check flaky, 1 warning, 1 skipped, 3 passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// Areas with failures come before areas that only passed; within an area, failures before passes.
	if !(strings.Index(out, "Session materials") < strings.Index(out, "Synchronize and recover") &&
		strings.Index(out, "Synchronize and recover") < strings.Index(out, "\nDiscovery")) {
		t.Errorf("areas not ordered by worst status:\n%s", out)
	}
	if strings.Index(out, "FLAKY  SYNC-SKIP-UNCHANGED") > strings.Index(out, "PASS   SYNC-IDENTITY") {
		t.Error("a passed check is listed before a flaky one in its area")
	}
	// The summary table counts per area and in total.
	total := regexp.MustCompile(`(?m)^  Total\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$`).FindStringSubmatch(out)
	if total == nil || strings.Join(total[1:], " ") != "8 3 2 1 1 1 0 0" {
		t.Errorf("summary total row = %v, want 8 3 2 1 1 1 0 0", total)
	}
	if !regexp.MustCompile(`(?m)^  Synchronize and recover\s+4\s+1\s+0\s+1\s+1\s+1\s+0\s+0$`).MatchString(out) {
		t.Errorf("no per-area row for Synchronize and recover:\n%s", out)
	}
	// A word longer than the line is cut, not overflowing.
	if !strings.Contains(out, "supercalifragilistic") {
		t.Error("long word lost")
	}
}

func TestTextColourIsOnlyDecoration(t *testing.T) {
	plain := render(t, "text", term.NewStyles(false), 80, sample())
	colour := render(t, "text", term.NewStyles(true), 80, sample())
	if !ansiSeq.MatchString(colour) {
		t.Fatal("coloured output has no escape sequence")
	}
	if stripped := ansiSeq.ReplaceAllString(colour, ""); stripped != plain {
		t.Errorf("coloured output differs from plain output beyond escapes:\n--- plain\n%s\n--- stripped\n%s", plain, stripped)
	}
}

func TestTextVerdicts(t *testing.T) {
	r := sample()
	var kept []Result
	for _, res := range r.Results {
		if res.Status == StatusPassed || res.Status == StatusWarning {
			kept = append(kept, res)
		}
	}
	r.Results = kept
	r.Summarize()
	if out := render(t, "text", term.NewStyles(false), 80, r); !strings.Contains(out, "PASSED: 1 warning, 3 passed") {
		t.Errorf("passing report verdict missing:\n%s", out)
	}
	if r.HasFailures() {
		t.Error("warnings counted as failures")
	}
	if !sample().HasFailures() {
		t.Error("failed checks not counted as failures")
	}
	flaky := &Report{Results: []Result{{Check: "X", Status: StatusFlaky}}}
	if !flaky.HasFailures() {
		t.Error("a flaky check does not fail the run")
	}
	empty := &Report{Schema: Schema}
	if out := render(t, "text", term.NewStyles(false), 80, empty); !strings.Contains(out, "NO CHECKS RAN") {
		t.Errorf("empty report verdict missing:\n%s", out)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := sample()
	out := render(t, "json", term.Styles{}, 0, r)
	if !strings.HasSuffix(out, "}\n") || strings.HasSuffix(out, "\n\n") {
		t.Errorf("JSON does not end in exactly one newline")
	}
	if !strings.HasPrefix(out, "{\n  \"schema\": \"astrabox.conformance/v1\",\n  \"tool\": {\n    \"name\"") {
		t.Errorf("JSON not indented by two spaces with schema first:\n%.120s", out)
	}
	if !strings.Contains(out, `\"../token\"`) {
		t.Error("message lost")
	}
	if html := render(t, "json", term.Styles{}, 0, shard(1, Result{Check: "H", Status: StatusFailed, Message: "a < b && c"})); !strings.Contains(html, `"a < b && c"`) {
		t.Errorf("HTML escaping applied:\n%s", html)
	}
	back, err := ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := normalized(r)
	if !reflect.DeepEqual(back, want) {
		t.Errorf("round trip changed the report:\n got %+v\nwant %+v", back, want)
	}
	// The same report renders byte for byte the same.
	if again := render(t, "json", term.Styles{}, 0, back); again != out {
		t.Error("re-rendering a read report changes the bytes")
	}
	// Empty lists are [] and an absent location is null.
	var raw struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if got := string(raw.Results[0]["evidence"]); got != "[]" {
		t.Errorf("empty evidence written as %s", got)
	}
	if got := string(raw.Results[0]["location"]); got != "null" {
		t.Errorf("absent location written as %s", got)
	}
}

func TestReadJSONRejects(t *testing.T) {
	cases := map[string]string{
		"not json":      "hello",
		"no schema":     `{"results": []}`,
		"other schema":  `{"schema": "astrabox.conformance/v2", "results": []}`,
		"bad status":    `{"schema": "astrabox.conformance/v1", "results": [{"check": "A", "status": "ok"}]}`,
		"no check":      `{"schema": "astrabox.conformance/v1", "results": [{"status": "passed"}]}`,
		"trailing data": `{"schema": "astrabox.conformance/v1", "results": []} {}`,
		"wrong type":    `{"schema": "astrabox.conformance/v1", "seed": "x"}`,
	}
	for name, in := range cases {
		if _, err := ReadJSON(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, err := ReadJSON(strings.NewReader(`{"schema": "astrabox.conformance/v2"}`))
	if err == nil || !strings.Contains(err.Error(), "astrabox.conformance/v1") {
		t.Errorf("schema error does not name the expected schema: %v", err)
	}
}

func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return consumerSchema(t, "sarif-schema-2.1.0.json", true)
}

// consumerSchema compiles the JSON schema testdata/name, a consumer's own (testdata/README.md); formats
// asserts the schema's string formats too.
func consumerSchema(t *testing.T, name string, formats bool) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if formats {
		c.AssertFormat()
	}
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

type xSARIF struct {
	Schema  string `json:"$schema"`
	Version string `json:"version"`
	Runs    []struct {
		Tool struct {
			Driver struct {
				Name           string `json:"name"`
				Version        string `json:"version"`
				InformationURI string `json:"informationUri"`
				Rules          []struct {
					ID                   string                  `json:"id"`
					Name                 string                  `json:"name"`
					FullDescription      struct{ Text string }   `json:"fullDescription"`
					DefaultConfiguration struct{ Level string }  `json:"defaultConfiguration"`
					Properties           struct{ Tags []string } `json:"properties"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		Results []struct {
			RuleID    string                `json:"ruleId"`
			RuleIndex int                   `json:"ruleIndex"`
			Level     string                `json:"level"`
			Message   struct{ Text string } `json:"message"`
			Locations []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI       string `json:"uri"`
						URIBaseID string `json:"uriBaseId"`
					} `json:"artifactLocation"`
					Region struct{ StartLine int } `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
			RelatedLocations    []json.RawMessage `json:"relatedLocations"`
			PartialFingerprints map[string]string `json:"partialFingerprints"`
		} `json:"results"`
	} `json:"runs"`
}

func TestSARIFValidAndMeaningful(t *testing.T) {
	sch := sarifSchema(t)
	r := sample()
	out := render(t, "sarif", term.Styles{}, 0, r)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("SARIF does not validate: %v\n%s", err, out)
	}
	// The validator catches a broken document (so the check above can fail).
	broken, _ := jsonschema.UnmarshalJSON(strings.NewReader(strings.Replace(out, `"level": "error"`, `"level": "fatal"`, 1)))
	if sch.Validate(broken) == nil {
		t.Fatal("schema accepts an invalid level")
	}
	var doc xSARIF
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	run := doc.Runs[0]
	d := run.Tool.Driver
	if doc.Version != "2.1.0" || d.Name != "astrabox" || d.Version != "0.3.0" || d.InformationURI == "" {
		t.Errorf("driver %+v version %s", d, doc.Version)
	}
	if len(d.Rules) != len(r.Results) {
		t.Errorf("%d rules for %d checks", len(d.Rules), len(r.Results))
	}
	for i, rule := range d.Rules {
		clauses := r.Results[i].Clauses
		if rule.ID != r.Results[i].Check || len(rule.Properties.Tags) < 1+len(clauses) || !reflect.DeepEqual(rule.Properties.Tags[1:1+len(clauses)], clauses) {
			t.Errorf("rule %d: %+v", i, rule)
		}
		if strings.ContainsAny(rule.Name, " -") {
			t.Errorf("rule name %q is not an identifier", rule.Name)
		}
	}
	if d.Rules[2].FullDescription.Text != r.Results[2].Help || d.Rules[4].DefaultConfiguration.Level != "warning" {
		t.Error("rule description or default level not from the check")
	}
	s := r.Summary
	if len(run.Results) != s.Failed+s.Flaky+s.Warning {
		t.Fatalf("%d results, want %d", len(run.Results), s.Failed+s.Flaky+s.Warning)
	}
	byRule := map[string]int{}
	for i, res := range run.Results {
		byRule[res.RuleID] = i
		if d.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %s has ruleIndex %d -> %s", res.RuleID, res.RuleIndex, d.Rules[res.RuleIndex].ID)
		}
		if len(res.Locations) != 1 || res.Locations[0].PhysicalLocation.ArtifactLocation.URIBaseID != "%SRCROOT%" {
			t.Errorf("result %s locations %+v", res.RuleID, res.Locations)
		}
		if res.PartialFingerprints[FingerprintKey] == "" {
			t.Errorf("result %s has no fingerprint", res.RuleID)
		}
	}
	sess := run.Results[byRule["SESSION-NAMES"]]
	if loc := sess.Locations[0].PhysicalLocation; loc.ArtifactLocation.URI != "src/acme_provider/provider.py" || loc.Region.StartLine != 42 {
		t.Errorf("absolute location not made relative to the project: %+v", loc)
	}
	if len(sess.RelatedLocations) != 2 || sess.Level != "error" {
		t.Errorf("SESSION-NAMES: %d related locations, level %s", len(sess.RelatedLocations), sess.Level)
	}
	plan := run.Results[byRule["PLAN-SYNC"]]
	if loc := plan.Locations[0].PhysicalLocation; loc.ArtifactLocation.URI != "pyproject.toml" || loc.Region.StartLine != 1 {
		t.Errorf("result without location does not point at pyproject.toml:1: %+v", loc)
	}
	if w := run.Results[byRule["SYNC-NO-LOG-CONFIG"]]; w.Level != "warning" || w.Locations[0].PhysicalLocation.ArtifactLocation.URI != "src/acme_provider/sync.py" {
		t.Errorf("warning result: %+v", w)
	}
	if !strings.HasPrefix(run.Results[byRule["SYNC-SKIP-UNCHANGED"]].Message.Text, "(flaky)") {
		t.Error("flaky result not marked")
	}
}

func TestSARIFFingerprintsStable(t *testing.T) {
	fps := func(r *Report) map[string]string {
		var doc xSARIF
		if err := json.Unmarshal([]byte(render(t, "sarif", term.Styles{}, 0, r)), &doc); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, res := range doc.Runs[0].Results {
			m[res.RuleID] = res.PartialFingerprints[FingerprintKey]
		}
		return m
	}
	a, b := fps(sample()), fps(sample())
	if !reflect.DeepEqual(a, b) {
		t.Errorf("fingerprints differ between identical runs: %v %v", a, b)
	}
	// Another seed: generated IDs and counts change, the finding stays the same.
	r := sample()
	r.Seed = 99
	r.Results[2].Message = strings.Replace(r.Results[2].Message, "s-4f9a1c22", "s-0b77e310", 1)
	r.Results[3].Message = strings.Replace(r.Results[3].Message, "2 of 5", "3 of 5", 1)
	if c := fps(r); !reflect.DeepEqual(a, c) {
		t.Errorf("fingerprints depend on generated IDs: %v %v", a, c)
	}
	// A different message, path or check is a different finding.
	if Fingerprint("X", "a.py", "m") == Fingerprint("Y", "a.py", "m") ||
		Fingerprint("X", "a.py", "m") == Fingerprint("X", "b.py", "m") ||
		Fingerprint("X", "a.py", "wrote a file") == Fingerprint("X", "a.py", "logged a secret") {
		t.Error("fingerprint ignores check, path or message")
	}
	seen := map[string]bool{}
	for _, v := range a {
		if seen[v] {
			t.Errorf("two findings share fingerprint %s", v)
		}
		seen[v] = true
	}
}

func TestSARIFRoot(t *testing.T) {
	r := sample()
	var b bytes.Buffer
	if err := (SARIF{Root: "/home/dev"}).Render(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"uri": "acme/src/acme_provider/provider.py"`) {
		t.Errorf("Root not used for relative paths")
	}
	if !strings.Contains(b.String(), `"uri": "acme/pyproject.toml"`) {
		t.Errorf("the manifest fallback is not relative to Root")
	}
	r.Results[2].Location.Path = "/home/dev/acme/src/my provider.py"
	b.Reset()
	if err := (SARIF{}).Render(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"uri": "src/my%20provider.py"`) {
		t.Errorf("space in path not percent-encoded")
	}
}

func TestGitHubEscaping(t *testing.T) {
	if got := escapeData("50% done\r\nnext\n"); got != "50%25 done%0D%0Anext%0A" {
		t.Errorf("escapeData = %q", got)
	}
	if got := escapeProperty("a:b,c%d\ne"); got != "a%3Ab%2Cc%25d%0Ae" {
		t.Errorf("escapeProperty = %q", got)
	}
	if got := escapeData("a:b,c"); got != "a:b,c" {
		t.Errorf("escapeData escapes : or , in a message: %q", got)
	}
}

func TestGitHubAnnotations(t *testing.T) {
	r := sample()
	r.Results[4].Message = "100% of runs\n::set-env name=X::y"
	out := render(t, "github", term.Styles{}, 0, r)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var ann []string
	for _, ln := range lines {
		if strings.HasPrefix(ln, "::") {
			ann = append(ann, ln)
		}
	}
	s := r.Summary
	if len(ann) != s.Failed+s.Flaky+s.Warning {
		t.Fatalf("%d annotations, want %d:\n%s", len(ann), s.Failed+s.Flaky+s.Warning, out)
	}
	want := "::error file=src/acme_provider/provider.py,line=42,title=SESSION-NAMES::Returned file names are safe basenames: prepare_session returned"
	if !strings.HasPrefix(ann[0], want) || !strings.Contains(ann[0], "%0AHint: Return bare names") {
		t.Errorf("first annotation:\n%s\nwant prefix\n%s", ann[0], want)
	}
	if !strings.HasPrefix(ann[1], "::error title=SYNC-SKIP-UNCHANGED::(flaky) ") {
		t.Errorf("flaky annotation without location: %s", ann[1])
	}
	if !strings.HasPrefix(ann[2], "::warning file=src/acme_provider/sync.py,line=88,title=SYNC-NO-LOG-CONFIG::") ||
		!strings.Contains(ann[2], "100%25 of runs%0A::set-env") {
		t.Errorf("warning annotation or escaping: %s", ann[2])
	}
	if strings.Contains(out, "EP-GROUP") || strings.Contains(out, "RECOVER-NO-FENCE-NEWER") {
		t.Error("passed or skipped checks annotated")
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "failed 2") || !strings.Contains(last, "flaky 1") {
		t.Errorf("summary line %q", last)
	}
	r.Results[2].Severity = SeverityNote
	if out := render(t, "github", term.Styles{}, 0, r); !strings.HasPrefix(out, "::notice file=") {
		t.Errorf("failed check of severity note is not a notice:\n%s", out)
	}
}

func shard(seed int64, results ...Result) *Report {
	r := &Report{Schema: Schema, Tool: Tool{Name: "astrabox", Version: "0.3.0"},
		Provider: Provider{Name: "acme", EntryPoint: "acme = acme:P", Target: "acme:P"}, Seed: seed, Results: results}
	r.Summarize()
	return r
}

func TestMerge(t *testing.T) {
	a := shard(7,
		Result{Check: "A", Status: StatusPassed, Evidence: []Evidence{{Text: "a1"}}},
		Result{Check: "B", Status: StatusWarning, Message: "maybe", Evidence: []Evidence{{Text: "b1"}}, Location: &Location{Path: "p.py", Line: 3}},
		Result{Check: "C", Status: StatusSkipped, Message: "not applicable"},
		Result{Check: "D", Status: StatusFlaky, Message: "sometimes"},
	)
	a.Scenarios = []string{"s1", "s2"}
	b := shard(7,
		Result{Check: "B", Status: StatusFailed, Message: "broken", Evidence: []Evidence{{Text: "b2"}}},
		Result{Check: "A", Status: StatusSkipped, Message: "n/a"},
		Result{Check: "C", Status: StatusPassed},
		Result{Check: "D", Status: StatusFailed, Message: "always"},
		Result{Check: "E", Status: StatusPassed},
	)
	b.Scenarios = []string{"s2", "s3"}
	before := len(a.Results[1].Evidence)
	m, err := Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, res := range m.Results {
		ids = append(ids, res.Check+"="+string(res.Status))
	}
	if got := strings.Join(ids, " "); got != "A=passed B=failed C=passed D=failed E=passed" {
		t.Errorf("merged statuses %s", got)
	}
	bm := m.Results[1]
	if bm.Message != "broken" || len(bm.Evidence) != 2 || bm.Evidence[0].Text != "b1" || bm.Evidence[1].Text != "b2" {
		t.Errorf("merged B: %+v", bm)
	}
	if bm.Location == nil || bm.Location.Path != "p.py" {
		t.Error("location of the milder shard lost when the worse shard has none")
	}
	if m.Summary != (Summary{Total: 5, Passed: 3, Failed: 2}) {
		t.Errorf("summary %+v", m.Summary)
	}
	if strings.Join(m.Scenarios, ",") != "s1,s2,s3" {
		t.Errorf("scenarios %v", m.Scenarios)
	}
	if len(a.Results[1].Evidence) != before || a.Results[1].Status != StatusWarning {
		t.Error("Merge modified its input")
	}
	// failed > flaky > warning > passed > skipped, whichever shard comes first.
	order := []Status{StatusFailed, StatusFlaky, StatusWarning, StatusPassed, StatusSkipped}
	for i := range order {
		for j := range order {
			m, err := Merge(shard(1, Result{Check: "X", Status: order[i]}), shard(1, Result{Check: "X", Status: order[j]}))
			if err != nil {
				t.Fatal(err)
			}
			want := order[min(i, j)]
			if m.Results[0].Status != want {
				t.Errorf("%s + %s = %s, want %s", order[i], order[j], m.Results[0].Status, want)
			}
		}
	}
}

func TestMergeRejects(t *testing.T) {
	other := shard(7)
	other.Provider.Name = "other"
	if _, err := Merge(shard(7), other); err == nil || !strings.Contains(err.Error(), "provider") {
		t.Errorf("different providers merged: %v", err)
	}
	if _, err := Merge(shard(7), shard(8)); err == nil || !strings.Contains(err.Error(), "seed") {
		t.Errorf("different seeds merged: %v", err)
	}
	if _, err := Merge(); err == nil {
		t.Error("merge of nothing accepted")
	}
	if _, err := Merge(shard(7), nil); err == nil {
		t.Error("nil report accepted")
	}
	v2 := shard(7)
	v2.Schema = "astrabox.conformance/v2"
	if _, err := Merge(shard(7), v2); err == nil {
		t.Error("other schema merged")
	}
	one, err := Merge(sample())
	if err != nil || !reflect.DeepEqual(one.Summary, sample().Summary) {
		t.Errorf("merging one report changes it: %v", err)
	}
}
