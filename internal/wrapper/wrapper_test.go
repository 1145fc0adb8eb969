package wrapper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fixture copies testdata/wrappers/name into a temporary directory with mode 0755, so the tests do not
// depend on the checkout keeping the executable bit.
func fixture(t *testing.T, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "testdata", "wrappers", name))
	if err != nil {
		t.Fatal(err)
	}
	return script(t, name, string(data))
}

// script writes an executable wrapper with the given text.
func script(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func check(t *testing.T, path string, timeout time.Duration) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only to prevent a hang
	defer cancel()
	res, err := Check(ctx, Options{Path: path, Timeout: timeout})
	if err != nil {
		t.Fatalf("Check(%s): %v", path, err)
	}
	if len(res.Probes) != 3 {
		t.Fatalf("%d probes, want 3", len(res.Probes))
	}
	return res
}

func TestPassingWrapper(t *testing.T) {
	res := check(t, fixture(t, "passes.sh"), 0)
	for _, p := range res.Probes {
		if p.LeftRunning {
			t.Errorf("%s: reported as leaving a process running", p.Command())
		}
	}
	if !res.Passed || res.Failed() != 0 {
		t.Fatalf("want a pass, got %+v", res)
	}
	if res.Clause != "SESSION-CLI-PROBE" || res.Timeout != 5 {
		t.Errorf("clause %q timeout %v", res.Clause, res.Timeout)
	}
	for i, want := range [][]string{{"-v"}, {"--version"}} {
		p := res.Probes[i]
		if p.Expect != PassThrough || len(p.RealCLICalls) != 1 || strings.Join(p.RealCLICalls[0], " ") != strings.Join(want, " ") {
			t.Errorf("probe %d: %+v", i, p)
		}
		if p.Stdout != res.VersionLine+"\n" || p.ExitCode != 0 {
			t.Errorf("probe %d: stdout %q exit %d", i, p.Stdout, p.ExitCode)
		}
	}
	gate := res.Probes[2]
	if gate.Expect != Gated || len(gate.RealCLICalls) != 0 || gate.ExitCode != 78 {
		t.Errorf("gate probe: %+v", gate)
	}
	if !strings.Contains(gate.Stderr, "no Session material") {
		t.Errorf("gate stderr %q", gate.Stderr)
	}
}

func TestWrapperThatBlocksTheProbe(t *testing.T) {
	res := check(t, fixture(t, "blocks-probe.sh"), 0)
	if res.Passed || res.Failed() != 2 {
		t.Fatalf("want the two version probes to fail, got %+v", res)
	}
	for _, p := range res.Probes[:2] {
		if p.Passed || len(p.RealCLICalls) != 0 {
			t.Errorf("%s: %+v", p.Command(), p)
		}
		for _, want := range []string{"never reached", "exit status 78", "version line did not reach stdout"} {
			if !strings.Contains(p.Summary, want) {
				t.Errorf("%s: summary %q lacks %q", p.Command(), p.Summary, want)
			}
		}
	}
	if !res.Probes[2].Passed {
		t.Errorf("the gate probe should pass: %+v", res.Probes[2])
	}
}

func TestWrapperThatRewritesTheArgs(t *testing.T) {
	res := check(t, fixture(t, "rewrites-args.sh"), 0)
	if res.Passed || res.Failed() != 2 {
		t.Fatalf("want the two version probes to fail, got %+v", res)
	}
	p := res.Probes[0]
	want := "the real CLI saw [--settings /etc/claude/settings.json --version] instead of [-v]"
	if !strings.Contains(p.Summary, want) || p.ExitCode != 0 || p.Stdout != res.VersionLine+"\n" {
		t.Errorf("-v probe: %+v", p)
	}
	if got := strings.Join(p.RealCLICalls[0], "|"); got != "--settings|/etc/claude/settings.json|--version" {
		t.Errorf("recorded %q", got)
	}
}

func TestWrapperWithoutGate(t *testing.T) {
	res := check(t, script(t, "open.sh", "#!/bin/sh\nexec \"${ASTRABOX_REAL_CLI:-claude}\" \"$@\"\n"), 0)
	if res.Passed || res.Failed() != 1 || res.Probes[2].Passed {
		t.Fatalf("want only the gate probe to fail, got %+v", res)
	}
	if !strings.Contains(res.Probes[2].Summary, "not gated: the real CLI ran for [-p hello]") {
		t.Errorf("summary %q", res.Probes[2].Summary)
	}
	if got := res.Probes[2].RealCLICalls; len(got) != 1 || strings.Join(got[0], " ") != "-p hello" {
		t.Errorf("recorded %q", got)
	}
}

func TestWrapperFindsClaudeOnPath(t *testing.T) {
	// No ASTRABOX_REAL_CLI: `claude` on PATH is the stub too.
	res := check(t, script(t, "path.sh", "#!/bin/sh\ncase \"$1\" in -v|--version) exec claude \"$@\";; esac\nexit 1\n"), 0)
	if !res.Passed {
		t.Fatalf("want a pass, got %+v", res)
	}
}

func TestEnvironmentCarriesNoSessionMaterial(t *testing.T) {
	t.Setenv("SESSION_TOKEN_FILE", "/etc/hostname")
	t.Setenv("ASTRABOX_TEST_SECRET", "x")
	// The wrapper dumps its environment to stderr, then behaves.
	res := check(t, script(t, "env.sh", "#!/bin/sh\nenv >&2\n[ \"$1\" = -p ] && exit 1\nexec claude \"$@\"\n"), 0)
	env := res.Probes[0].Stderr
	for _, name := range []string{"SESSION_TOKEN_FILE", "ASTRABOX_TEST_SECRET"} {
		if strings.Contains(env, name+"=") {
			t.Errorf("%s leaked into the probe's environment:\n%s", name, env)
		}
	}
	for _, want := range []string{"PATH=", "HOME=", "LANG=", "ASTRABOX_REAL_CLI="} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %s:\n%s", want, env)
		}
	}
	if !res.Passed {
		t.Errorf("want a pass: %+v", res)
	}
}

func TestExtraStdoutFailsTheProbe(t *testing.T) {
	res := check(t, script(t, "banner.sh", "#!/bin/sh\n[ \"$1\" = -p ] && exit 1\necho 'welcome to the image'\nexec claude \"$@\"\n"), 0)
	p := res.Probes[0]
	if p.Passed || !strings.Contains(p.Summary, "stdout carries more than the real CLI's version line") {
		t.Errorf("-v probe: %+v", p)
	}
}

func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	// The wrapper hangs in a child that keeps stdout open; the run is killed at the timeout.
	res := check(t, script(t, "hang.sh", "#!/bin/sh\nsleep 60 &\nsleep 60\n"), 200*time.Millisecond)
	for _, p := range res.Probes {
		if p.Passed && p.Expect == PassThrough {
			t.Errorf("%s passed", p.Command())
		}
		if !p.TimedOut || !strings.Contains(p.Summary, "did not finish within 200ms") {
			t.Errorf("%s: %+v", p.Command(), p)
		}
	}
	if res.Probes[2].Passed {
		t.Errorf("a gate probe that timed out passed")
	}
}

func TestBackgroundChildDoesNotHoldTheCheck(t *testing.T) {
	res := check(t, script(t, "bg.sh", "#!/bin/sh\n(sleep 60) &\n[ \"$1\" = -p ] && exit 1\nexec claude \"$@\"\n"), 0)
	if !res.Passed {
		t.Fatalf("want a pass: %+v", res)
	}
	for _, p := range res.Probes {
		if !p.LeftRunning {
			t.Errorf("%s: the background child was not noticed", p.Command())
		}
	}
}

func TestOutputIsBounded(t *testing.T) {
	res := check(t, script(t, "flood.sh", "#!/bin/sh\nwhile :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done\n"), 300*time.Millisecond)
	p := res.Probes[0]
	if len(p.Stdout) > outputLimit || !p.StdoutTruncated {
		t.Errorf("stdout kept %d bytes, truncated %v", len(p.Stdout), p.StdoutTruncated)
	}
}

func TestArgumentsAreRecordedExactly(t *testing.T) {
	res := check(t, script(t, "odd.sh", "#!/bin/sh\nexec claude 'a b' '' \"line1\nline2\" \"q'uote\"\n"), 0)
	got := res.Probes[0].RealCLICalls
	want := []string{"a b", "", "line1\nline2", "q'uote"}
	if len(got) != 1 || len(got[0]) != len(want) {
		t.Fatalf("recorded %q", got)
	}
	for i := range want {
		if got[0][i] != want[i] {
			t.Errorf("arg %d = %q, want %q", i, got[0][i], want[i])
		}
	}
	if !strings.Contains(res.Probes[0].Summary, `the real CLI saw [`+`"a b" "" "line1\nline2" "q'uote"] instead of [-v]`) {
		t.Errorf("summary %q", res.Probes[0].Summary)
	}
}

func TestUnusableWrappers(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sh")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noShebang := filepath.Join(dir, "noshebang")
	if err := os.WriteFile(noShebang, []byte{0x7f, 'E', 'L', 'F', 0, 0, 0, 0}, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		filepath.Join(dir, "missing.sh"): "does not exist",
		dir:                              "is a directory",
		plain:                            "is not executable",
		noShebang:                        "cannot be started",
		"":                               "is empty",
	}
	for path, want := range cases {
		_, err := Check(context.Background(), Options{Path: path})
		var ue *UnusableError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an UnusableError saying %q", path, err, want)
		}
	}
}

func TestStubRecordsUnderAnyPath(t *testing.T) {
	// The wrapper hands the real CLI an empty PATH; the stub still records its call.
	res := check(t, script(t, "nopath.sh", "#!/bin/sh\n[ \"$1\" = -p ] && exit 1\nreal=\"$ASTRABOX_REAL_CLI\"\nPATH=/nonexistent exec \"$real\" \"$@\"\n"), 0)
	if !res.Passed {
		t.Fatalf("want a pass: %+v", res)
	}
}

func TestEachCallIsRecorded(t *testing.T) {
	res := check(t, script(t, "twice.sh", "#!/bin/sh\n[ \"$1\" = -p ] && exit 1\nclaude --version >/dev/null\nexec claude \"$@\"\n"), 0)
	p := res.Probes[0]
	if len(p.RealCLICalls) != 2 || strings.Join(p.RealCLICalls[0], " ") != "--version" || strings.Join(p.RealCLICalls[1], " ") != "-v" {
		t.Fatalf("calls %q", p.RealCLICalls)
	}
	if p.Passed || !strings.Contains(p.Summary, "the real CLI saw [--version] instead of [-v]") {
		t.Errorf("-v probe: %+v", p)
	}
}

// TestSetsidDescendantsAreKilled: what a wrapper starts is gone after the check, even when it left the
// wrapper's session with setsid behind a double fork (the old process-group kill missed it).
func TestSetsidDescendantsAreKilled(t *testing.T) {
	marker := fmt.Sprintf("astrabox-wrapper-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	text := "#!/bin/sh\n(setsid sh -c 'sleep 600; : " + marker + "' &) \n[ \"$1\" = -p ] && exit 1\nexec claude \"$@\"\n"
	res := check(t, script(t, "setsid.sh", text), 0)
	if !res.Passed {
		t.Fatalf("want a pass: %+v", res)
	}
	for _, p := range res.Probes {
		if !p.LeftRunning {
			t.Errorf("%s: the escaped child was not noticed", p.Command())
		}
	}
	if left := withCmdline(marker); len(left) > 0 {
		t.Fatalf("left running after the check: %v", left)
	}
}

// withCmdline lists the live processes whose command line contains s.
func withCmdline(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && strings.Contains(string(b), s) && !strings.Contains(string(st), ") Z ") {
			out = append(out, pid)
		}
	}
	return out
}
