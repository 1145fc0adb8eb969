package recipes

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestActionRegistersTheConciseProblemMatcher: the action's install step registers a problem matcher file
// that exists in the repository and whose patterns read file, line, column, check ID and message out of a
// concise line.
func TestActionRegistersTheConciseProblemMatcher(t *testing.T) {
	action := string(readRepoFile(t, "action.yml"))
	m := regexp.MustCompile(`::add-matcher::\$ASTRABOX_ACTION_PATH/(\S+)"`).FindStringSubmatch(action)
	if m == nil {
		t.Fatal("action.yml registers no problem matcher")
	}
	var pm struct {
		ProblemMatcher []struct {
			Owner   string `json:"owner"`
			Pattern []struct {
				Regexp  string `json:"regexp"`
				File    int    `json:"file"`
				Line    int    `json:"line"`
				Column  int    `json:"column"`
				Code    int    `json:"code"`
				Message int    `json:"message"`
			} `json:"pattern"`
		} `json:"problemMatcher"`
	}
	if err := json.Unmarshal(readRepoFile(t, m[1]), &pm); err != nil {
		t.Fatalf("%s: %v", m[1], err)
	}
	line := "providers/acme/src/acme/provider.py:42:1: LEAK-LOG No secret in logs: a planted secret was logged"
	matched := 0
	for _, p := range pm.ProblemMatcher {
		g := regexp.MustCompile(p.Pattern[0].Regexp).FindStringSubmatch(line)
		if g == nil {
			continue
		}
		matched++
		q := p.Pattern[0]
		got := strings.Join([]string{g[q.File], g[q.Line], g[q.Column], g[q.Code], g[q.Message]}, "|")
		if got != "providers/acme/src/acme/provider.py|42|1|LEAK-LOG|No secret in logs: a planted secret was logged" {
			t.Errorf("%s reads %q", p.Owner, got)
		}
	}
	if matched != 1 {
		t.Errorf("%d matchers match a concise error line", matched)
	}
}
