package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wrapperFixture copies testdata/wrappers/name to a temporary file with mode 0755.
func wrapperFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(repoPath(filepath.Join("testdata", "wrappers", name)))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckWrapperPasses(t *testing.T) {
	code, stdout, stderr := run(t, "image", "check-wrapper", wrapperFixture(t, "passes.sh"))
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if n := strings.Count(stdout, "passed  wrapper"); n != 3 || !strings.Contains(stdout, "all 3 probes passed") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

func TestCheckWrapperBlockingTheProbeFails(t *testing.T) {
	code, stdout, _ := run(t, "image", "check-wrapper", wrapperFixture(t, "blocks-probe.sh"))
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stdout)
	}
	for _, want := range []string{"failed  wrapper -v", "failed  wrapper --version", "passed  wrapper -p hello",
		"the real CLI was never reached", "stderr: claude wrapper: no Session material", "2 of 3 probes failed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestCheckWrapperRewritingArgsFailsJSON(t *testing.T) {
	code, stdout, _ := run(t, "image", "check-wrapper", "--format", "json", wrapperFixture(t, "rewrites-args.sh"))
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stdout)
	}
	var res struct {
		Clause string `json:"clause"`
		Passed bool   `json:"passed"`
		Probes []struct {
			Args         []string   `json:"args"`
			Passed       bool       `json:"passed"`
			Summary      string     `json:"summary"`
			RealCLICalls [][]string `json:"real_cli_calls"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if res.Clause != "SESSION-CLI-PROBE" || res.Passed || len(res.Probes) != 3 {
		t.Fatalf("result %+v", res)
	}
	if p := res.Probes[0]; p.Passed || strings.Join(p.Args, " ") != "-v" || len(p.RealCLICalls) != 1 ||
		strings.Join(p.RealCLICalls[0], " ") != "--settings /etc/claude/settings.json --version" {
		t.Errorf("-v probe %+v", p)
	}
	if !res.Probes[2].Passed {
		t.Errorf("gate probe %+v", res.Probes[2])
	}
}

func TestCheckWrapperUnusableIsExit2(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]string{
		"not executable":         {"image", "check-wrapper", plain},
		"does not exist":         {"image", "check-wrapper", filepath.Join(t.TempDir(), "nope.sh")},
		"unknown format":         {"image", "check-wrapper", "--format", "xml", wrapperFixture(t, "passes.sh")},
		"must be positive":       {"image", "check-wrapper", "--timeout", "0s", wrapperFixture(t, "passes.sh")},
		"needs one WRAPPER path": {"image", "check-wrapper"},
	}
	for want, args := range cases {
		code, stdout, stderr := run(t, args...)
		if code != ExitUndecided || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, stderr %q (want 2 and %q)", args, code, stderr, want)
		}
		if stdout != "" {
			t.Errorf("%v: stdout %q", args, stdout)
		}
	}
}

func TestCheckWrapperHelpDocumentsTheConvention(t *testing.T) {
	code, stdout, _ := run(t, "image", "check-wrapper", "--help")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"ASTRABOX_REAL_CLI", "claude", "-p hello", "Exit status", "astrabox image check-wrapper --format json"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
