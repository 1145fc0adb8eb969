package report

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/term"
)

func TestParseFormatIsCaseInsensitiveAndListsFormats(t *testing.T) {
	for in, want := range map[string]Format{"SARIF": FormatSARIF, " Text ": FormatText, "gitlab": FormatGitLab, "Concise": FormatConcise} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	_, err := ParseFormat("yaml")
	if err == nil || !strings.Contains(err.Error(), "text, json, junit, sarif, github, gitlab, concise") {
		t.Errorf("unknown format error %v", err)
	}
	if _, err := For("JUnit", term.Styles{}, 80); err != nil {
		t.Errorf("For is case-sensitive: %v", err)
	}
}

// TestFormatSets: the text-or-JSON commands and the report commands validate --format with the same registry;
// each set accepts its own formats in any case, refuses the others and names what it accepts.
func TestFormatSets(t *testing.T) {
	for _, c := range []struct {
		set  FormatSet
		in   string
		want Format
		err  string
	}{
		{TextOrJSON, " JSON", FormatJSON, ""},
		{TextOrJSON, "text", FormatText, ""},
		{TextOrJSON, "sarif", "", `unknown format "sarif"; use text or json`},
		{TextOrJSON, "", "", `unknown format ""; use text or json`},
		{Reports, "Concise", FormatConcise, ""},
		{Reports, "yaml", "", `unknown output format "yaml": use one of ` + strings.Join(Formats(), ", ")},
	} {
		got, err := c.set.Parse(c.in)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%v.Parse(%q) = %q, %v; want %q, %q", c.set, c.in, got, err, c.want, c.err)
		}
	}
	if strings.Join(Reports.Names(), ",") != strings.Join(Formats(), ",") || len(Reports) != len(formatOrder) {
		t.Errorf("Reports %v is not every format %v", Reports, formatOrder)
	}
}

var conciseLine = regexp.MustCompile(`^([^:]+):(\d+):(\d+): ([A-Z][A-Z0-9-]*) (.+)$`)

func TestConciseOneLinePerFinding(t *testing.T) {
	r := withNewStatuses()
	var b bytes.Buffer
	if err := (Concise{Root: "/home/dev"}).Render(&b, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	s := r.Summary
	want := s.Failed + s.Flaky + s.Warning + s.NotExercised
	if len(lines) != want+1 {
		t.Fatalf("%d lines for %d findings:\n%s", len(lines), want, b.String())
	}
	got := map[string]string{}
	for _, ln := range lines[:want] {
		m := conciseLine.FindStringSubmatch(ln)
		if m == nil {
			t.Fatalf("line %q is not PATH:LINE:COL: ID MESSAGE", ln)
		}
		got[m[4]] = m[1] + ":" + m[2] + " " + m[5]
	}
	for id, prefix := range map[string]string{
		"SESSION-NAMES":       "acme/src/acme_provider/provider.py:42 Returned file names are safe basenames: prepare_session returned",
		"SYNC-SKIP-UNCHANGED": "acme/pyproject.toml:1 (flaky) Unchanged inputs",
		"SYNC-NO-LOG-CONFIG":  "acme/src/acme_provider/sync.py:88 (warning) Trusted configuration",
		"TURN-VALIDITY-FRESH": "acme/src/acme_provider/turn.py:9 (not exercised) Refresh before expiry",
	} {
		if !strings.HasPrefix(got[id], prefix) {
			t.Errorf("%s: %q, want prefix %q", id, got[id], prefix)
		}
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Error("control characters in concise output")
	}
	if !strings.HasPrefix(lines[want], "astrabox: 5 finding(s) in 10 checks") || conciseLine.MatchString(lines[want]) {
		t.Errorf("summary line %q", lines[want])
	}
}

// TestProblemMatcherMatchesConcise applies the problem matcher the action registers to concise output: each
// finding matches exactly one matcher, warnings and not_exercised the warning one, the summary line none.
func TestProblemMatcherMatchesConcise(t *testing.T) {
	data, err := os.ReadFile("../../.github/astrabox-matcher.json")
	if err != nil {
		t.Fatal(err)
	}
	var pm struct {
		ProblemMatcher []struct {
			Owner    string `json:"owner"`
			Severity string `json:"severity"`
			Pattern  []struct {
				Regexp string `json:"regexp"`
				File   int    `json:"file"`
				Line   int    `json:"line"`
				Code   int    `json:"code"`
			} `json:"pattern"`
		} `json:"problemMatcher"`
	}
	if err := json.Unmarshal(data, &pm); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := (Concise{}).Render(&b, withNewStatuses()); err != nil {
		t.Fatal(err)
	}
	for _, ln := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		var sev []string
		for _, m := range pm.ProblemMatcher {
			p := m.Pattern[0]
			if g := regexp.MustCompile(p.Regexp).FindStringSubmatch(ln); g != nil {
				sev = append(sev, m.Severity)
				if g[p.File] == "" || g[p.Line] == "" || g[p.Code] == "" {
					t.Errorf("%s: empty group in %q", m.Owner, ln)
				}
			}
		}
		summary := strings.HasPrefix(ln, "astrabox: ")
		warn := strings.Contains(ln, " (warning) ") || strings.Contains(ln, " (not exercised) ")
		switch {
		case summary && len(sev) != 0:
			t.Errorf("summary line matched: %q", ln)
		case !summary && len(sev) != 1:
			t.Errorf("line %q matched %d matchers", ln, len(sev))
		case !summary && warn != (sev[0] == "warning"):
			t.Errorf("line %q has severity %s", ln, sev[0])
		}
	}
}

func TestGitLabCodeQuality(t *testing.T) {
	r := secretsSample()
	var b bytes.Buffer
	if err := (GitLab{Root: "/home/dev"}).Render(&b, r); err != nil {
		t.Fatal(err)
	}
	var issues []struct {
		Type        string   `json:"type"`
		CheckName   string   `json:"check_name"`
		Description string   `json:"description"`
		Categories  []string `json:"categories"`
		Severity    string   `json:"severity"`
		Fingerprint string   `json:"fingerprint"`
		Location    struct {
			Path  string `json:"path"`
			Lines struct {
				Begin int `json:"begin"`
			} `json:"lines"`
		} `json:"location"`
	}
	if err := json.Unmarshal(b.Bytes(), &issues); err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if len(issues) != s.Failed+s.Flaky+s.Warning+s.NotExercised {
		t.Fatalf("%d issues", len(issues))
	}
	seen := map[string]bool{}
	sev := map[string]string{}
	for _, is := range issues {
		// The fields GitLab requires of each issue (docs: Code Quality report format).
		if is.Description == "" || is.CheckName == "" || is.Fingerprint == "" || is.Location.Path == "" || is.Location.Lines.Begin < 1 {
			t.Errorf("incomplete issue %+v", is)
		}
		if !map[string]bool{"info": true, "minor": true, "major": true, "critical": true, "blocker": true}[is.Severity] {
			t.Errorf("severity %q", is.Severity)
		}
		if seen[is.Fingerprint] {
			t.Errorf("duplicate fingerprint %s", is.Fingerprint)
		}
		seen[is.Fingerprint] = true
		sev[is.CheckName] = is.Severity + " " + is.Location.Path + " " + strings.Join(is.Categories, ",")
	}
	for id, want := range map[string]string{
		"LEAK-LOG":            "critical acme/src/acme_provider/provider.py Security",
		"SESSION-NAMES":       "critical acme/src/acme_provider/provider.py Bug Risk",
		"SYNC-NO-LOG-CONFIG":  "minor acme/src/acme_provider/sync.py Security",
		"PLAN-SYNC":           "critical acme/pyproject.toml Bug Risk",
		"TURN-VALIDITY-FRESH": "info acme/src/acme_provider/turn.py Bug Risk",
	} {
		if sev[id] != want {
			t.Errorf("%s: %q, want %q", id, sev[id], want)
		}
	}
	if empty := render(t, "gitlab", term.Styles{}, 0, &Report{Schema: Schema}); strings.TrimSpace(empty) != "[]" {
		t.Errorf("empty report is %q, want []", empty)
	}
}
