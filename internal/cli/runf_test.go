package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// execute runs a command built by a NewCmdX with args and returns its error and outputs; no Python starts
// when the command was given a runF.
//
//lint:ignore ST1008 the error comes first so that a test reads as err, stdout, stderr, in the order cobra reports them
func execute(t *testing.T, build func(*Factory) *cobra.Command, args ...string) (error, string, string) {
	t.Helper()
	io, out, errb := term.Test()
	f := &Factory{IO: io, Getenv: func(string) string { return "" }, Version: "test"}
	cmd := build(f)
	// Never nil: cobra reads os.Args when given nil, which are the test binary's own flags.
	cmd.SetArgs(append([]string{}, args...))
	cmd.SetOut(io.Out)
	cmd.SetErr(io.Err)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return err, out.String(), errb.String()
}

func TestProvidersOptions(t *testing.T) {
	var got *ProvidersOptions
	runF := func(o *ProvidersOptions) error { got = o; return nil }
	build := func(f *Factory) *cobra.Command { return NewCmdProviders(f, runF) }
	err, _, _ := execute(t, build, "--project", "p", "--python", "/usr/bin/python3", "--provider", "demo", "--format", "JSON")
	if err != nil || got == nil {
		t.Fatalf("err %v, options %v", err, got)
	}
	if *got != (ProvidersOptions{Project: "p", Python: "/usr/bin/python3", Provider: "demo", Format: "json"}) {
		t.Errorf("options %+v", *got)
	}
	got = nil
	err, _, _ = execute(t, build, "--format", "sarif")
	if got != nil || exitCode(err) != ExitUndecided || !strings.Contains(err.Error(), `unknown format "sarif"; use text or json`) {
		t.Errorf("--format sarif: err %v (exit %d), runF called: %v", err, exitCode(err), got != nil)
	}
	if err, _, _ := execute(t, build, "extra"); err == nil || got != nil {
		t.Errorf("a positional argument was accepted")
	}
}

// TestProvidersRendering renders descriptions: a loading subclass with overrides and a plan, and one that
// does not load.
func TestProvidersRendering(t *testing.T) {
	descs := []*conformance.Description{
		{Name: "demo", Value: "demo.provider:Demo", Source: "pyproject.toml", Loaded: true, IsSubclass: true, Provider: "demo",
			File: "src/demo/provider.py", Line: 12,
			Methods: []conformance.MethodSummary{{Name: "plan", Overridden: true}, {Name: "prepare_session", Overridden: true, Async: true}, {Name: "recover"}},
			Plan:    &conformance.PlanSummary{SessionBound: true, Declaration: []byte(`{"v":1}`)}},
		{Name: "other", Value: "other:X", Source: "setup.cfg", LoadError: "ModuleNotFoundError: No module named 'other'"},
	}
	var out bytes.Buffer
	writeDescriptions(&out, term.NewStyles(false), descs)
	want := `demo = demo.provider:Demo
  declared in pyproject.toml
  subclass of RuntimePreparationProvider: yes
  defined at src/demo/provider.py:12
  name: demo
  overrides: plan (sync), prepare_session (async)
  plan (default configuration): session_bound=true declaration={"v":1}

other = other:X
  declared in setup.cfg
  does not load: ModuleNotFoundError: No module named 'other'
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	if err := providersVerdict(descs, ""); exitCode(err) != ExitUndecided || !strings.Contains(err.Error(), "2 providers are declared (demo, other)") {
		t.Errorf("two providers: %v", err)
	}
	if err := providersVerdict(descs, "other"); err == nil || !strings.Contains(err.Error(), "other does not load") {
		t.Errorf("a provider that does not load: %v", err)
	}
	if err := providersVerdict(descs[:1], ""); err != nil {
		t.Errorf("one good provider: %v", err)
	}
}

func TestSimulateCannedScenario(t *testing.T) {
	var got *SimOptions
	build := func(f *Factory) *cobra.Command {
		return NewCmdSimulate(f, func(o *SimOptions) error { got = o; return nil })
	}
	err, _, _ := execute(t, build, "turn", "--replicas", "3", "--retries", "2", "--seed", "9", "--refresh", "--principal", "bob", "--format", "Text")
	if err != nil || got == nil {
		t.Fatalf("err %v", err)
	}
	sc := got.Scenario
	if got.Format != "text" || sc.Name != "turn" || sc.Seed != 9 || sc.Replicas != 3 || sc.Principals["bob"].Consent != "granted" {
		t.Errorf("options %+v, scenario %+v", got, sc)
	}
	var ops, replicas []string
	for _, st := range sc.Steps {
		ops, replicas = append(ops, st.Op), append(replicas, st.Replica)
	}
	if strings.Join(ops, ",") != strings.Join([]string{simulate.OpColdStart, simulate.OpTurn, simulate.OpRetry, simulate.OpRetry}, ",") ||
		strings.Join(replicas, ",") != "r1,r1,r2,r3" {
		t.Errorf("steps %v on %v", ops, replicas)
	}
	if sc.Steps[1].LiveFor.Seconds != 900 {
		t.Errorf("--refresh did not keep the write live: %+v", sc.Steps[1].LiveFor)
	}

	got = nil
	err, _, _ = execute(t, build, "claim", "--format", "junit")
	if got != nil || exitCode(err) != ExitUndecided || !strings.Contains(err.Error(), `unknown format "junit"`) {
		t.Errorf("--format junit: %v", err)
	}
	err, _, _ = execute(t, build, "cold-start", "--consent", "maybe")
	var ue *usageError
	if got != nil || !errors.As(err, &ue) {
		t.Errorf("an invalid scenario is not a usage error: %v", err)
	}
}

func TestSimulateRunFile(t *testing.T) {
	var got *SimOptions
	build := func(f *Factory) *cobra.Command {
		return NewCmdSimulate(f, func(o *SimOptions) error { got = o; return nil })
	}
	file := filepath.Join(t.TempDir(), "s.yaml")
	yaml := "name: mine\nseed: 4\nreplicas: 1\nprincipals:\n  alice: {consent: granted}\nsteps:\n  - op: cold_start\n    session: s1\n    agent: agent-1\n    principal: alice\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err, _, _ := execute(t, build, "run", file); err != nil || got.Scenario.Name != "mine" || got.Scenario.Seed != 4 {
		t.Fatalf("err %v, options %+v", err, got)
	}
	if err, _, _ := execute(t, build, "run", file, "--seed", "11"); err != nil || got.Scenario.Seed != 11 {
		t.Fatalf("--seed does not override the file's seed: err %v, seed %d", err, got.Scenario.Seed)
	}
	got = nil
	err, _, _ := execute(t, build, "run", filepath.Join(t.TempDir(), "missing.yaml"))
	if got != nil || exitCode(err) != ExitUndecided || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing file: %v", err)
	}
	if err, _, _ := execute(t, build, "run"); got != nil || !strings.Contains(err.Error(), "needs one scenario FILE.yaml") {
		t.Errorf("no file: %v", err)
	}
}

func TestConformanceRunOptions(t *testing.T) {
	var got *RunOptions
	build := func(f *Factory) *cobra.Command {
		return NewCmdConformanceRun(f, func(o *RunOptions) error { got = o; return nil })
	}
	err, _, _ := execute(t, build, "proj", "--seed", "5", "--check", "TURN-*,LEAK-LOG", "--fail-on", "Warning", "--exit-zero", "--set", "seed=7", "--set", "jobs=1")
	if err != nil || got == nil {
		t.Fatalf("err %v", err)
	}
	if got.Project != "proj" || got.Seed != 5 || !got.SeedSet || strings.Join(got.Checks, " ") != "TURN-* LEAK-LOG" ||
		got.Policy != (Policy{FailOn: FailOnWarning, ExitZero: true}) || strings.Join(got.Set, " ") != "seed=7 jobs=1" {
		t.Errorf("options %+v", got)
	}
	got = nil
	if err, _, _ := execute(t, build, "proj"); err != nil || got.SeedSet || got.Policy.FailOn != FailOnFailed {
		t.Errorf("defaults: err %v, options %+v", err, got)
	}
	got = nil
	for _, args := range [][]string{{"a", "--project", "b"}, {"a", "b"}, {"--fail-on", "never"}} {
		err, _, _ := execute(t, build, args...)
		var ue *usageError
		if got != nil || !errors.As(err, &ue) || exitCode(err) != ExitUndecided {
			t.Errorf("%v: err %v, runF called: %v", args, err, got != nil)
		}
	}
}

func TestVersion(t *testing.T) {
	var got *VersionOptions
	build := func(f *Factory) *cobra.Command {
		return NewCmdVersion(f, func(o *VersionOptions) error { got = o; return nil })
	}
	if err, _, _ := execute(t, build, "--format", "JSON"); err != nil || got.Format != "json" {
		t.Fatalf("err %v, options %+v", err, got)
	}
	got = nil
	if err, _, _ := execute(t, build, "--format", "xml"); got != nil || exitCode(err) != ExitUndecided {
		t.Errorf("--format xml: %v", err)
	}
	var text, js bytes.Buffer
	if err := writeVersion(&text, "text", "v1.2.3", "abc123", "go1.26", true); err != nil || text.String() != "astrabox v1.2.3\ncommit abc123 (modified)\ngo1.26\n" {
		t.Errorf("text: %q (%v)", text.String(), err)
	}
	if err := writeVersion(&js, "json", "v1.2.3", "abc123", "go1.26", false); err != nil ||
		!strings.Contains(js.String(), `"version": "v1.2.3"`) || !strings.Contains(js.String(), `"modified": false`) {
		t.Errorf("json: %s (%v)", js.String(), err)
	}
}

func TestConformanceListAndExplain(t *testing.T) {
	var lo *ListOptions
	list := func(f *Factory) *cobra.Command {
		return NewCmdConformanceList(f, func(o *ListOptions) error { lo = o; return nil })
	}
	if err, _, _ := execute(t, list, "--format", "Json"); err != nil || lo.Format != "json" {
		t.Fatalf("err %v, options %+v", err, lo)
	}
	lo = nil
	if err, _, _ := execute(t, list, "--format", "sarif"); lo != nil || exitCode(err) != ExitUndecided {
		t.Errorf("--format sarif: %v", err)
	}
	err, out, _ := execute(t, func(f *Factory) *cobra.Command { return NewCmdConformanceList(f, nil) }, "--format", "json")
	if err != nil || !strings.Contains(out, `"id": "LEAK-LOG"`) {
		t.Errorf("list json: %v\n%s", err, out)
	}

	var eo *ExplainOptions
	explain := func(f *Factory) *cobra.Command {
		return NewCmdConformanceExplain(f, func(o *ExplainOptions) error { eo = o; return nil })
	}
	if err, _, _ := execute(t, explain, "turn-idempotent"); err != nil || eo.CheckID != "turn-idempotent" {
		t.Fatalf("err %v, options %+v", err, eo)
	}
	err, _, _ = execute(t, func(f *Factory) *cobra.Command { return NewCmdConformanceExplain(f, nil) }, "LEAK-LGO")
	if exitCode(err) != ExitUndecided || !strings.Contains(err.Error(), "did you mean LEAK-LOG") {
		t.Errorf("unknown check: %v", err)
	}
}

func TestReportMergeOptions(t *testing.T) {
	var got *MergeOptions
	build := func(f *Factory) *cobra.Command {
		return NewCmdReportMerge(f, func(o *MergeOptions) error { got = o; return nil })
	}
	if err, _, _ := execute(t, build, "a.json", "b.json", "--format", "SARIF", "-o", "out.sarif", "--source-root", "."); err != nil ||
		strings.Join(got.Files, " ") != "a.json b.json" || got.format != "sarif" || got.Output != "out.sarif" || got.SourceRoot != "." {
		t.Fatalf("err %v, options %+v", err, got)
	}
	got = nil
	if err, _, _ := execute(t, build, "a.json", "--format", "yaml"); got != nil || exitCode(err) != ExitUndecided || !strings.Contains(err.Error(), "yaml") {
		t.Errorf("--format yaml: %v", err)
	}
	if err, _, _ := execute(t, build); got != nil || !strings.Contains(err.Error(), "needs at least one REPORT.json") {
		t.Errorf("no file: %v", err)
	}
}

func TestInitAndCheckWrapperOptions(t *testing.T) {
	var io *InitOptions
	initCmd := func(f *Factory) *cobra.Command {
		return newInitCmdWith(f, func(o *InitOptions) error { io = o; return nil })
	}
	if err, _, _ := execute(t, initCmd); err != nil || io.Dir != "." {
		t.Fatalf("default directory: err %v, options %+v", err, io)
	}
	if err, _, _ := execute(t, initCmd, "my-provider", "--name", "acme", "--package", "acme_p", "--force"); err != nil ||
		*io != (InitOptions{Dir: "my-provider", Name: "acme", Package: "acme_p", Force: true}) {
		t.Fatalf("err %v, options %+v", err, io)
	}
	io = nil
	if err, _, _ := execute(t, initCmd, "a", "b"); io != nil || exitCode(err) != ExitUndecided {
		t.Errorf("two directories: %v", err)
	}

	var wo *CheckWrapperOptions
	wrap := func(f *Factory) *cobra.Command {
		return NewCmdImageCheckWrapper(f, func(o *CheckWrapperOptions) error { wo = o; return nil })
	}
	if err, _, _ := execute(t, wrap, "./claude", "--format", "JSON", "--timeout", "3s"); err != nil ||
		wo.Path != "./claude" || wo.Format != "json" || wo.Timeout.String() != "3s" {
		t.Fatalf("err %v, options %+v", err, wo)
	}
	if err, _, _ := execute(t, wrap, "--real-cli", "/opt/claude/bin/claude", "./claude"); err != nil || wo.RealCLI != "/opt/claude/bin/claude" {
		t.Fatalf("--real-cli: err %v, options %+v", err, wo)
	}
	wo = nil
	for _, args := range [][]string{{"./claude", "--timeout", "0s"}, {"./claude", "--format", "xml"}, {}} {
		if err, _, _ := execute(t, wrap, args...); wo != nil || exitCode(err) != ExitUndecided {
			t.Errorf("%v: %v", args, err)
		}
	}
}
