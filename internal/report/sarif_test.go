package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

type xRule struct {
	ID         string `json:"id"`
	HelpURI    string `json:"helpUri"`
	Properties struct {
		Tags             []string `json:"tags"`
		SecuritySeverity string   `json:"security-severity"`
	} `json:"properties"`
}

type xResult struct {
	RuleID    string `json:"ruleId"`
	Kind      string `json:"kind"`
	Level     string `json:"level"`
	Locations []struct {
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region struct{ StartLine int } `json:"region"`
		} `json:"physicalLocation"`
	} `json:"locations"`
}

func decodeSARIF(t *testing.T, s SARIF, r *Report) (string, []xRule, []xResult) {
	t.Helper()
	var b bytes.Buffer
	if err := s.Render(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []xRule `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []xResult `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return b.String(), doc.Runs[0].Tool.Driver.Rules, doc.Runs[0].Results
}

// secretsSample is the sample with a failed secret-leak check and a new-status pair.
func secretsSample() *Report {
	r := withNewStatuses()
	r.Results = append(r.Results, Result{Check: "LEAK-LOG", Title: "No secret in logs", Area: AreaSecrets, Severity: SeverityError,
		Clauses: []string{"LEAK-LOG"}, Status: StatusFailed, Message: "a planted secret was logged at INFO",
		Location: &Location{Path: "src/acme_provider/provider.py", Line: 50}})
	r.Summarize()
	return r
}

func TestSARIFRulesClassSecurityAndLinkDocs(t *testing.T) {
	_, rules, _ := decodeSARIF(t, SARIF{}, secretsSample())
	for _, rule := range rules {
		if rule.HelpURI != ChecksDocURI+"#"+strings.ToLower(rule.ID) {
			t.Errorf("rule %s helpUri %q", rule.ID, rule.HelpURI)
		}
		security := false
		for _, tag := range rule.Properties.Tags {
			security = security || tag == "security"
		}
		// The checks that judge secret handling: a leak, and trusted configuration in the logs.
		want := rule.ID == "LEAK-LOG" || rule.ID == "SYNC-NO-LOG-CONFIG"
		if security != want || (rule.Properties.SecuritySeverity != "") != want {
			t.Errorf("rule %s: security tag %v, security-severity %q", rule.ID, security, rule.Properties.SecuritySeverity)
		}
		if rule.ID == "LEAK-LOG" && (rule.Properties.SecuritySeverity != "8.0" || !strings.Contains(strings.Join(rule.Properties.Tags, " "), "cwe-532")) {
			t.Errorf("LEAK-LOG: %+v", rule.Properties)
		}
	}
}

func TestSARIFNewStatusKinds(t *testing.T) {
	_, _, results := decodeSARIF(t, SARIF{}, secretsSample())
	kinds := map[string]string{}
	for _, res := range results {
		kinds[res.RuleID] = res.Kind + "/" + res.Level
	}
	for id, want := range map[string]string{"RECOVER-TRUTH": "notApplicable/none", "TURN-VALIDITY-FRESH": "open/none", "SESSION-NAMES": "/error", "SYNC-NO-LOG-CONFIG": "/warning"} {
		if kinds[id] != want {
			t.Errorf("%s: kind/level %q, want %q", id, kinds[id], want)
		}
	}
	if _, ok := kinds["EP-GROUP"]; ok {
		t.Error("a passed check is a result")
	}
}

func TestSARIFFallbackNamesTheDeclaringFile(t *testing.T) {
	for source, want := range map[string]string{
		"setup.cfg:12 [options.entry_points]":                                                 "setup.cfg:12",
		"pyproject.toml:7 [project.entry-points]":                                             "pyproject.toml:7",
		"setup.cfg [options.entry_points]":                                                    "setup.cfg:1",
		"/home/dev/acme/setup.cfg:9 [options.entry_points]; also installed distribution acme": "setup.cfg:9",
		"installed distribution acme 1.0 at /x/site":                                          "setup.py:1", // Manifest set below
	} {
		r := sample()
		r.Provider.Source = source
		_, _, results := decodeSARIF(t, SARIF{Manifest: "setup.py"}, r)
		for _, res := range results {
			if res.RuleID != "PLAN-SYNC" {
				continue
			}
			loc := res.Locations[0].PhysicalLocation
			if got := loc.ArtifactLocation.URI + ":" + itoa(loc.Region.StartLine); got != want {
				t.Errorf("source %q: fallback %s, want %s", source, got, want)
			}
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestSARIFMultitoolGitHubRules runs Microsoft's SARIF multitool with GitHub's rule set (what GitHub Advanced
// Security requires of an upload) over a report with every status, and proves the tool does complain about a
// result without locations.
func TestSARIFMultitoolGitHubRules(t *testing.T) {
	out, _, _ := decodeSARIF(t, SARIF{}, secretsSample())
	if c := sarifMultitool(t, out); len(c) > 0 {
		t.Errorf("sarif-multitool complains:\n%s", strings.Join(c, "\n"))
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	res := doc["runs"].([]any)[0].(map[string]any)["results"].([]any)[0].(map[string]any)
	delete(res, "locations")
	broken, _ := json.Marshal(doc)
	if c := sarifMultitool(t, string(broken)); !strings.Contains(strings.Join(c, "\n"), "GH") {
		t.Errorf("sarif-multitool accepts a result without locations: the check proves nothing (%v)", c)
	}
}
