package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitlabConsumer reads a Code Quality artifact as GitLab does (Gitlab::Ci::Parsers::Codequality::CodeClimate
// with CodequalityReports): the file must parse as JSON; degradations are read in order and reading stops at
// the first one its schema rejects (the rest are silently lost); degradations are kept by fingerprint (a
// repeated fingerprint replaces the earlier one); a severity outside blocker..info sorts as unknown. It returns
// what GitLab would show, and why anything was lost.
func gitlabConsumer(t *testing.T, artifact []byte) (kept map[string]map[string]any, lost []string) {
	t.Helper()
	sch := consumerSchema(t, "gitlab-codeclimate.json", false)
	var root []any
	if err := json.Unmarshal(artifact, &root); err != nil {
		return nil, []string{"JSON parsing failed: " + err.Error()}
	}
	kept = map[string]map[string]any{}
	for i, d := range root {
		if err := sch.Validate(d); err != nil {
			lost = append(lost, "degradation "+itoa(i)+" and all after it: "+err.Error())
			break
		}
		m, _ := d.(map[string]any)
		fp, _ := m["fingerprint"].(string)
		if _, dup := kept[fp]; dup {
			lost = append(lost, "degradation "+itoa(i)+" replaces an earlier one with fingerprint "+fp)
		}
		kept[fp] = m
		if sev, _ := m["severity"].(string); !map[string]bool{"blocker": true, "critical": true, "major": true, "minor": true, "info": true}[strings.ToLower(sev)] {
			lost = append(lost, "degradation "+itoa(i)+" has severity "+sev+", which GitLab sorts as unknown")
		}
	}
	return kept, lost
}

// TestGitLabConsumerKeepsEveryIssue: GitLab keeps every issue the kit writes (none rejected by its schema,
// none collapsed by a shared fingerprint), for a report with findings in and out of the repository, with and
// without locations, and for the golden rendering; and each kept issue points at a repository-relative path
// and a line GitLab can link (its web_url is the path joined to the commit, #L and the line).
func TestGitLabConsumerKeepsEveryIssue(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", "report.gitlab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sample bytes.Buffer
	r := secretsSample()
	if err := (GitLab{Root: "/home/dev"}).Render(&sample, r); err != nil {
		t.Fatal(err)
	}
	for name, artifact := range map[string][]byte{"golden": golden, "sample": sample.Bytes()} {
		var all []any
		if err := json.Unmarshal(artifact, &all); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(all) == 0 {
			t.Fatalf("%s: no issue to judge", name)
		}
		kept, lost := gitlabConsumer(t, artifact)
		if len(lost) > 0 || len(kept) != len(all) {
			t.Errorf("%s: GitLab keeps %d of %d issues: %v", name, len(kept), len(all), lost)
		}
		for fp, d := range kept {
			loc, _ := d["location"].(map[string]any)
			path, _ := loc["path"].(string)
			lines, _ := loc["lines"].(map[string]any)
			begin, _ := lines["begin"].(float64)
			if path == "" || strings.HasPrefix(path, "/") || strings.HasPrefix(path, "../") || begin < 1 {
				t.Errorf("%s: issue %s cannot be linked: path %q, line %v", name, fp, path, begin)
			}
		}
	}
	if n := len(secretsSample().Results); n < 2 {
		t.Fatalf("the sample has %d results", n)
	}
}

// TestGitLabConsumerCatchesLoss proves the consumer model: an issue without a fingerprint ends the reading, a
// repeated fingerprint loses an issue, and an unknown severity is noticed.
func TestGitLabConsumerCatchesLoss(t *testing.T) {
	for name, artifact := range map[string]string{
		"no fingerprint": `[{"description":"d","severity":"major","location":{"path":"a.py","lines":{"begin":1}}},{"description":"e","fingerprint":"2","severity":"major","location":{"path":"a.py","lines":{"begin":2}}}]`,
		"repeated":       `[{"description":"d","fingerprint":"1","severity":"major","location":{"path":"a.py","lines":{"begin":1}}},{"description":"e","fingerprint":"1","severity":"major","location":{"path":"a.py","lines":{"begin":2}}}]`,
		"line as text":   `[{"description":"d","fingerprint":"1","severity":"major","location":{"path":"a.py","lines":{"begin":"1"}}}]`,
		"severity":       `[{"description":"d","fingerprint":"1","severity":"error","location":{"path":"a.py","lines":{"begin":1}}}]`,
		"not json":       `[{"description":`,
	} {
		if _, lost := gitlabConsumer(t, []byte(artifact)); len(lost) == 0 {
			t.Errorf("%s: nothing lost", name)
		}
	}
}
