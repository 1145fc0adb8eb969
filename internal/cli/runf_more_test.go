package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/term"
	"github.com/astrabox-dev/astrabox/internal/wrapper"
)

// exploreUnderSimulate builds `simulate explore` under a simulate command with the shared flags, as
// NewCmdSimulate does, with runF in place of the run.
func exploreUnderSimulate(runF func(*SimExploreOptions) error) func(*Factory) *cobra.Command {
	return func(f *Factory) *cobra.Command {
		parent := &cobra.Command{Use: "simulate"}
		so := &SimOptions{}
		simulateFlags(parent, so)
		parent.AddCommand(NewCmdSimulateExplore(f, so, runF))
		return parent
	}
}

func TestSimulateExploreOptions(t *testing.T) {
	var got *SimExploreOptions
	build := exploreUnderSimulate(func(o *SimExploreOptions) error { got = o; return nil })
	err, _, _ := execute(t, build, "explore", "--explore", "40", "--seed", "7", "--shard", "2/4", "--check", "TURN-*,LEAK-LOG",
		"--skip", "PLAN-STABLE", "-j", "3", "--format", "JSON", "--project", "p", "--shrink-budget", "9", "--explore-fresh")
	if err != nil || got == nil {
		t.Fatalf("err %v, options %v", err, got)
	}
	if got.Sim.Format != "json" || got.Sim.Seed != 7 || got.Sim.Project != "p" || got.Jobs != 3 ||
		strings.Join(got.Checks, " ") != "TURN-* LEAK-LOG" || strings.Join(got.Skip, " ") != "PLAN-STABLE" ||
		got.Explore != (ExploreOptions{N: 40, Shard: "2/4", ShrinkBudget: 9, Fresh: true}) {
		t.Errorf("options %+v, simulate options %+v", got, got.Sim)
	}
	got = nil
	if err, _, _ := execute(t, build, "explore", "--last-failed"); err != nil || got == nil || got.Explore.N != 100 ||
		!got.Explore.LastFailed || got.Explore.ShrinkBudget != 60 || got.Sim.Format != "text" {
		t.Errorf("defaults with --last-failed: err %v, options %+v", err, got)
	}
	for args, want := range map[string]string{
		"explore --explore 0":           "nothing to explore: give --scenarios N or --last-failed",
		"explore --scenarios 0":         "nothing to explore: give --scenarios N or --last-failed",
		"explore --shard 3/2":           `--shard "3/2": use I/N with 1 <= I <= N`,
		"explore --format sarif":        `unknown format "sarif"; use text or json`,
		"explore --explore 0 --shard x": "nothing to explore",
	} {
		got = nil
		err, _, _ := execute(t, build, strings.Fields(args)...)
		var ue *usageError
		if got != nil || !errors.As(err, &ue) || exitCode(err) != ExitUndecided || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v (exit %d), runF called: %v; want a usage error with %q", args, err, exitCode(err), got != nil, want)
		}
	}
	if err, _, _ := execute(t, build, "explore", "extra"); err == nil || got != nil {
		t.Errorf("a positional argument was accepted")
	}
}

// TestSimulateExploreOutput renders an exploration result as the summary and as JSON, with its warnings on
// stderr and exit 1 for a failure.
func TestSimulateExploreOutput(t *testing.T) {
	res := &explore.Result{Seed: 7, Scenarios: 40, Callbacks: 900, Elapsed: 3 * time.Second,
		Failures: []explore.Failure{{Check: "TURN-IDEMPOTENT", Index: 12, Shrunk: []string{"cold_start s1", "turn s1 a1", "retry s1 a1"},
			Command: "astrabox simulate run .astrabox/failures/TURN-IDEMPOTENT-7-12.yaml"}},
		Errors: []string{"scenario 3: the harness did not start"}, Warnings: []string{"could not save a failure: read-only"}}
	f, out, errb := testFactory()
	err := writeExploreResult(f, "text", res, &secrets.Set{})
	want := "explored 40 scenario(s) with seed 7 in 3s: 900 callbacks (300/s), 1 failing\n  check(s)\n" +
		"  could not run scenario 3: the harness did not start\n" +
		"  TURN-IDEMPOTENT failed in scenario 12, shrunk to 3 step(s)\n" +
		"    replay: astrabox simulate run .astrabox/failures/TURN-IDEMPOTENT-7-12.yaml\n"
	if err != errFailed || out.String() != want || !strings.Contains(errb.String(), "warning: could not save a failure: read-only") {
		t.Errorf("text: err %v\nstdout:\n%s\nwant:\n%s\nstderr: %s", err, out.String(), want, errb.String())
	}
	f, out, _ = testFactory()
	res.Failures[0].Flaky = true
	if err := writeExploreResult(f, "json", res, &secrets.Set{}); err != errFailed || !strings.Contains(out.String(), `"check": "TURN-IDEMPOTENT"`) ||
		!strings.Contains(out.String(), `"flaky": true`) || !strings.Contains(out.String(), `"seed": 7`) {
		t.Errorf("json: err %v\n%s", err, out.String())
	}
	f, out, _ = testFactory()
	if err := writeExploreResult(f, "text", &explore.Result{Seed: 1, Scenarios: 2}, &secrets.Set{}); err != nil || !strings.Contains(strings.Join(strings.Fields(out.String()), " "), "0 failing check(s)") {
		t.Errorf("no failure: err %v, %s", err, out.String())
	}
}

// TestSimulateExploreOutputIsMasked: a scenario the kit could not run, a failure message and a warning that
// carry one of the run's secrets print it masked, as JSON and as text.
func TestSimulateExploreOutputIsMasked(t *testing.T) {
	canary := conformance.NewCanary()
	set := &secrets.Set{}
	set.Add(canary, "configuration field secrets.model_api_key")
	res := &explore.Result{Seed: 7, Failures: []explore.Failure{{Check: "LEAK-LOG", Message: "logged " + canary, Command: "c"}},
		Errors: []string{"scenario 3: replica r1 did not load: KeyError " + canary}, Warnings: []string{"could not save " + canary}}
	for _, format := range []string{"text", "json"} {
		f, out, errb := testFactory()
		if err := writeExploreResult(f, format, res, set); err != errFailed {
			t.Fatalf("%s: %v", format, err)
		}
		all := out.String() + errb.String()
		if m := set.FindString(all); len(m) > 0 || !secrets.HasMarker(out.String()) || !secrets.HasMarker(errb.String()) {
			t.Errorf("%s output not masked:\n%s", format, all)
		}
	}
}

func TestSDKPath(t *testing.T) {
	var got *SDKPathOptions
	build := func(f *Factory) *cobra.Command {
		return NewCmdSDKPath(f, func(o *SDKPathOptions) error { got = o; return nil })
	}
	if err, _, _ := execute(t, build); err != nil || got == nil || got.Extract == nil {
		t.Fatalf("err %v, options %+v", err, got)
	}
	got = nil
	if err, _, _ := execute(t, build, "extra"); err == nil || got != nil {
		t.Errorf("a positional argument was accepted: %v", err)
	}
	f, out, _ := testFactory()
	if err := sdkPath(f, &SDKPathOptions{Extract: func() (string, error) { return "/cache/astrabox/sdk-1", nil }}); err != nil || out.String() != "/cache/astrabox/sdk-1\n" {
		t.Errorf("sdk path: err %v, stdout %q", err, out.String())
	}
	err := sdkPath(f, &SDKPathOptions{Extract: func() (string, error) { return "", errors.New("read-only cache") }})
	if exitCode(err) != ExitUndecided || err.Error() != "extract the SDK: read-only cache" {
		t.Errorf("a failed extraction: %v (exit %d)", err, exitCode(err))
	}
}

// TestParentCommands: the parents list their subcommands and run nothing themselves.
func TestParentCommands(t *testing.T) {
	for name, c := range map[string]struct {
		build func(*Factory) *cobra.Command
		subs  string
	}{
		"conformance": {NewCmdConformance, "explain list run"},
		"image":       {NewCmdImage, "check-wrapper"},
		"sdk":         {NewCmdSDK, "path"},
	} {
		f, _, _ := testFactory()
		cmd := c.build(f)
		var subs []string
		for _, s := range cmd.Commands() {
			subs = append(subs, s.Name())
		}
		if cmd.Name() != name || strings.Join(subs, " ") != c.subs || cmd.Runnable() {
			t.Errorf("%s: name %s, subcommands %v, runnable %v", name, cmd.Name(), subs, cmd.Runnable())
		}
	}
}

// TestCheckWrapperOutput renders a wrapper check's result: one line per probe, the start of a failed
// probe's stderr, and the advice when one failed.
func TestCheckWrapperOutput(t *testing.T) {
	res := &wrapper.Result{Wrapper: "/img/claude", Clause: "SESSION-CLI-PROBE", Probes: []wrapper.Probe{
		{Args: []string{"-v"}, Passed: false, Summary: "the real CLI was never reached", Stderr: "claude wrapper: no Session material\nexit\n"},
		{Args: []string{"--version"}, Passed: true, Summary: "passed through", LeftRunning: true},
		{Args: []string{"-p", "hello"}, Passed: true, Summary: "gated"},
	}}
	f, out, _ := testFactory()
	writeWrapperText(f, res)
	for _, want := range []string{
		"SESSION-CLI-PROBE /img/claude, run without Session material\n",
		"  failed  wrapper -v         the real CLI was never reached\n",
		"          stderr: claude wrapper: no Session material | exit\n",
		"  passed  wrapper --version  passed through\n",
		"          note: something it started was still running after it exited (killed)\n",
		"  passed  wrapper -p hello   gated\n",
		"FAIL 1 of 3 probes failed.",
		"astrabox conformance explain SESSION-CLI-PROBE",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	res.Passed = true
	res.Probes = res.Probes[1:]
	f, out, _ = testFactory()
	writeWrapperText(f, res)
	if !strings.HasSuffix(out.String(), "ok all 2 probes passed\n") {
		t.Errorf("passing wrapper:\n%s", out.String())
	}
}

// testFactory is a Factory over term.Test() buffers (no colour), with an empty environment.
func testFactory() (*Factory, *bytes.Buffer, *bytes.Buffer) {
	io, out, errb := term.Test()
	return &Factory{IO: io, Getenv: func(string) string { return "" }, Version: "test"}, out, errb
}
