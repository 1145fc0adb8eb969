package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/conformance/checktest"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/testutil"
)

// TestInitThenConformanceIsGreen scaffolds a provider and runs the suite on it, as a newcomer would.
func TestInitThenConformanceIsGreen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acme-provider")
	if code, _, stderr := run(t, "init", dir); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := run(t, "conformance", "run", "--project", dir)
	if code != 0 {
		t.Fatalf("conformance run on a fresh scaffold: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

var canaryPattern = regexp.MustCompile(`astx_(canary|cred|wid)_[0-9A-Za-z]{4}`)

// TestReportsNeverPrintASecret runs leaking providers and requires that no report format carries a planted
// secret, in any encoding the kit searches for. The run's planted tokens and credentials follow from its
// seed, the fixture's default one, so they are those of the fixture's recorded evidence (the live run that
// TestFixtures holds the recording to): `make test` hunts those, without a second run; the long lane also
// collects the suite again in this test and hunts what that run planted. Canaries differ from run to run but
// all start with the canary prefix, hunted in every encoding.
func TestReportsNeverPrintASecret(t *testing.T) {
	for _, fixture := range []string{"leak-log", "leak-error", "leak-user-action", "leak-error-load-canary"} {
		fixture := fixture
		t.Run(fixture, func(t *testing.T) {
			project := repoPath("testdata/providers/broken/" + fixture)
			out := t.TempDir()
			files := map[string]string{"json": filepath.Join(out, "r.json"), "junit": filepath.Join(out, "r.xml"), "sarif": filepath.Join(out, "r.sarif"),
				"github": filepath.Join(out, "r.txt"), "gitlab": filepath.Join(out, "gl.json"), "concise": filepath.Join(out, "concise.txt")}
			code, stdout, stderr := run(t, "conformance", "run", "--project", project, "--format", "concise", "--output", files["concise"],
				"--json", files["json"], "--junit", files["junit"], "--sarif", files["sarif"], "--github", files["github"], "--gitlab", files["gitlab"])
			if code != ExitFailed {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
			}
			outputs := map[string]string{"stdout": stdout, "stderr": stderr}
			for k, p := range files {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				outputs[k] = string(b)
			}
			if fixture == "leak-error-load-canary" && !strings.Contains(outputs["json"], secrets.Marker("raw")) {
				// The provider raises the canary when its module loads: proof that it was there, masked.
				t.Fatalf("the load error does not carry the masked canary:\n%s", outputs["json"])
			}
			rec, err := checktest.Load(checktest.RecordingPath(repoPath("."), "broken/"+fixture))
			if err != nil {
				t.Fatal(err)
			}
			t.Run("recorded secrets", func(t *testing.T) {
				if !rec.NearMiss && rec.Evidence.Load != nil && rec.Evidence.Secrets.Len() == 0 {
					t.Fatal("the recording holds no planted secret to hunt")
				}
				noSecretIn(t, outputs, rec.Evidence.Secrets)
			})
			t.Run("live secrets", func(t *testing.T) {
				testutil.LongLane(t, "a second run of the suite for its planted secrets")
				ctx := context.Background()
				tg, err := conformance.Resolve(ctx, conformance.Options{Project: project, Python: "python3", Getenv: os.Getenv})
				if err != nil {
					t.Fatal(err)
				}
				info, _, err := conformance.Inspect(ctx, tg)
				if err != nil {
					t.Fatal(err)
				}
				seed := int64(1) // the fixture's default seed, as the run above had
				if tg.Settings.Seed != nil {
					seed = *tg.Settings.Seed
				}
				ev, err := conformance.Collect(ctx, tg, info, seed, conformance.Options{})
				if err != nil {
					t.Fatal(err)
				}
				noSecretIn(t, outputs, ev.Secrets)
				// What `make test` relies on: the recording planted what a run with its seed plants.
				if got, want := planted(ev.Histories), planted(rec.Evidence.Histories); !slices.Equal(got, want) {
					t.Errorf("this run planted %d secret(s), the recording %d, or other values: the recording is stale (%s)", len(got), len(want), checktest.RecordCommand)
				}
			})
		})
	}
}

// planted are the values the platform planted in a run (tokens, credentials), sorted: not material or
// environment, which a provider makes up, nor canaries, which differ from run to run.
func planted(hists []*simulate.History) []string {
	var out []string
	for _, h := range hists {
		for _, sec := range h.Secrets {
			if strings.HasPrefix(sec.Origin, "material") || strings.HasPrefix(sec.Origin, "environment") || strings.HasPrefix(sec.Value, conformance.CanaryPrefix) {
				continue
			}
			out = append(out, sec.Value)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// noSecretIn fails on any output that holds a canary (by its prefix, in every encoding), a planted value's
// pattern, or a secret of set other than material (which differs between runs of a provider that makes it up).
func noSecretIn(t *testing.T, outputs map[string]string, set *secrets.Set) {
	t.Helper()
	prefixes := &secrets.Set{}
	prefixes.Add(conformance.CanaryPrefix, "a configuration canary")
	for name, text := range outputs {
		if m := prefixes.FindString(text); len(m) > 0 {
			t.Errorf("%s output holds %s (%s)", name, m[0].Origin, m[0].Encoding)
		}
		if m := canaryPattern.FindString(text); m != "" {
			t.Errorf("%s output holds a planted secret (%s...)", name, m[:12])
		}
		for _, m := range set.FindString(text) {
			if strings.HasPrefix(m.Origin, "material") || strings.HasPrefix(m.Origin, "environment") {
				continue // material differs between runs of a provider that makes it up
			}
			t.Errorf("%s output holds %s (%s)", name, m.Origin, m.Encoding)
		}
	}
}

// TestReportFormatsAgree checks that the SARIF output validates against the SARIF 2.1.0 schema and that the
// JUnit counts match the JSON summary, on a real run with failures.
func TestReportFormatsAgree(t *testing.T) {
	out := t.TempDir()
	jsonFile, junitFile, sarifFile := filepath.Join(out, "r.json"), filepath.Join(out, "r.xml"), filepath.Join(out, "r.sarif")
	// As on GitHub Actions, whether or not this tree is a git repository (a source tarball is not).
	code, stdout, stderr := runWithEnv(t, map[string]string{"GITHUB_WORKSPACE": repoPath(".")}, "conformance", "run", "--project", repoPath("testdata/providers/broken/plan-no-io"),
		"--format", "github", "--json", jsonFile, "--junit", junitFile, "--sarif", sarifFile)
	if code != ExitFailed {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Annotations and SARIF paths are relative to the repository (the source root), not the project.
	if !strings.Contains(stdout, "::error file=testdata/providers/broken/plan-no-io/broken_plan_no_io.py,line=") {
		t.Errorf("annotation path is not repository-relative: %s", stdout)
	}
	data, _ := os.ReadFile(jsonFile)
	rep, err := report.ReadJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
		} `xml:"testsuite"`
	}
	xb, _ := os.ReadFile(junitFile)
	if err := xml.Unmarshal(xb, &suites); err != nil {
		t.Fatalf("junit does not parse: %v", err)
	}
	tests, failures := 0, 0
	for _, s := range suites.Suites {
		tests += s.Tests
		failures += s.Failures
	}
	if tests != rep.Summary.Total || failures != rep.Summary.Failed+rep.Summary.Flaky {
		t.Fatalf("junit counts %d/%d, json %d/%d", tests, failures, rep.Summary.Total, rep.Summary.Failed)
	}
	c := jsonschema.NewCompiler()
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustRead(t, repoPath("internal/report/testdata/sarif-schema-2.1.0.json"))))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("sarif.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("sarif.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustRead(t, sarifFile)))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("SARIF does not validate: %v", err)
	}
	var sarif struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					Physical struct {
						Artifact struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	json.Unmarshal(mustRead(t, sarifFile), &sarif)
	found := false
	for _, r := range sarif.Runs[0].Results {
		if r.RuleID == "PLAN-NO-IO" && len(r.Locations) > 0 && strings.HasSuffix(r.Locations[0].Physical.Artifact.URI, ".py") && r.Locations[0].Physical.Region.StartLine > 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("SARIF has no PLAN-NO-IO result pointing at the provider's Python file")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
