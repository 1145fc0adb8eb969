package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/suppress"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// NewCmdConformance builds `astrabox conformance` and its subcommands.
func NewCmdConformance(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run, list and explain the conformance checks",
	}
	cmd.AddCommand(NewCmdConformanceRun(f, nil), NewCmdConformanceList(f, nil), NewCmdConformanceExplain(f, nil))
	return cmd
}

// RunOptions are the options of `astrabox conformance run`.
type RunOptions struct {
	// Watch runs again whenever the provider's code or settings change (--watch).
	Watch    bool
	Project  string
	Python   string
	Provider string
	Seed     int64
	SeedSet  bool
	Checks   []string
	Skip     []string
	Format   string
	Output   string
	JSONFile string
	JUnit    string
	SARIF    string
	GitHub   string
	GitLab   string
	Jobs     int
	Explore  ExploreOptions
	// SourceRoot is the directory SARIF and GitHub annotation paths are relative to.
	SourceRoot string
	// ConfigFile and Set replace or override the project's settings (--config FILE, --set KEY=VALUE).
	ConfigFile string
	Set        []string
	// Policy decides the exit status from the results (--fail-on, --exit-zero).
	Policy Policy
	failOn string
	// Coverage is the coverage options (see coverage.go).
	Coverage CoverageOptions

	// onReport, when set, receives the run's report once it is written (--watch compares the verdicts).
	onReport func(*report.Report)
}

// projectFlags adds the flags every provider-facing command shares.
func projectFlags(cmd *cobra.Command, project, python, provider *string) {
	cmd.Flags().StringVar(project, "project", "", "provider project directory (default: the nearest directory upward holding pyproject.toml or setup.cfg)")
	cmd.Flags().StringVar(python, "python", "", "Python interpreter to load the provider with (default: "+interpreterOrder+")")
	cmd.Flags().StringVar(provider, "provider", "", "pick one provider by entry-point name when several are declared (the platform itself would refuse to start)")
}

// NewCmdConformanceRun builds `astrabox conformance run`; runF, when set, replaces the run.
func NewCmdConformanceRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	o := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run [PROJECT]",
		Short: "Run the conformance suite against the project's provider",
		Long: `Run the default suite of lifecycle scenarios against the provider declared by the project and
decide every conformance check over what happened.

PROJECT (or --project) is the provider's project directory; by default the nearest directory upward
holding pyproject.toml, setup.cfg or setup.py.

Exit status: 0 when no check failed (warnings allowed), 1 when at least one check failed (with
--fail-on warning also when one warned; --exit-zero turns 1 into 0), 2 when the kit could not decide
(bad usage, unreadable project, provider that does not load, conflicting providers, a check no
scenario exercised).`,
		Example: `  astrabox conformance run
  astrabox conformance run examples/providers/reference --format json
  astrabox conformance run --junit junit.xml --sarif astrabox.sarif
  astrabox conformance run --check 'TURN-*' --skip TURN-VALIDITY-FRESH`,
		Args: projectArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.SeedSet = cmd.Flags().Changed("seed")
			o.Coverage.Set = cmd.Flags().Changed("coverage")
			if err := takeProjectArg(cmd, args, &o.Project); err != nil {
				return err
			}
			failOn, err := parseFailOn(o.failOn)
			if err != nil {
				return err
			}
			o.Policy.FailOn = failOn
			if err := parseFormat(&o.Format, report.Reports); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			if o.Watch {
				return runConformanceWatch(cmd.Context(), f, o)
			}
			return runConformance(cmd.Context(), f, o)
		},
	}
	projectFlags(cmd, &o.Project, &o.Python, &o.Provider)
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "seed of every scenario (also from [tool.astrabox] seed)")
	cmd.Flags().StringSliceVar(&o.Checks, "check", nil, "run only checks matching these IDs, globs (SESSION-*) or areas")
	cmd.Flags().StringSliceVar(&o.Skip, "skip", nil, "skip checks matching these IDs, globs or areas")
	cmd.Flags().StringVarP(&o.Format, "format", "f", "text", "format on stdout: "+strings.Join(report.Reports.Names(), ", "))
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "write the --format output to this file instead of stdout")
	cmd.Flags().StringVar(&o.JSONFile, "json", "", "also write the JSON report to this file")
	cmd.Flags().StringVar(&o.JUnit, "junit", "", "also write a JUnit XML report to this file")
	cmd.Flags().StringVar(&o.SARIF, "sarif", "", "also write a SARIF 2.1.0 report to this file")
	cmd.Flags().StringVar(&o.GitHub, "github", "", "also write GitHub workflow annotations to this file")
	cmd.Flags().StringVar(&o.GitLab, "gitlab", "", "also write a GitLab Code Quality report to this file")
	cmd.Flags().IntVarP(&o.Jobs, "jobs", "j", 0, "scenarios run at once, each on its own replica processes and its own instance of every declared service (default: twice the number of cores, since the suite's scenarios partly wait on timed answers; the number of cores when the provider declares services or with --explore)")
	cmd.Flags().StringVar(&o.ConfigFile, "config", "", "read the settings from this file instead of the project's [tool.astrabox] or astrabox.toml (a pyproject.toml gives its [tool.astrabox] table)")
	cmd.Flags().StringArrayVar(&o.Set, "set", nil, "override one setting, KEY=VALUE with VALUE in TOML (--set seed=7 --set 'deadlines={turn=5}'); repeatable")
	cmd.Flags().StringVar(&o.failOn, "fail-on", string(FailOnFailed), "results that fail the run (exit 1): failed (failed or flaky checks) or warning (also warnings)")
	cmd.Flags().BoolVar(&o.Policy.ExitZero, "exit-zero", false, "exit 0 even when checks fail (exit 2 still means the kit could not decide)")
	exploreFlags(cmd, &o.Explore, 0)
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "run again whenever the provider's code (its code roots' *.py files) or settings change, saying what changed in the verdicts; Ctrl-C stops")
	cmd.Flags().StringVar(&o.SourceRoot, "source-root", "", "directory report and coverage file paths are relative to (default: GITHUB_WORKSPACE or CI_PROJECT_DIR, else the git repository holding the project, else the project)")
	coverageFlags(cmd, &o.Coverage)
	_ = cmd.RegisterFlagCompletionFunc("check", completeCheckIDs)
	_ = cmd.RegisterFlagCompletionFunc("skip", completeCheckIDs)
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(report.Reports.Names(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{string(FailOnFailed), string(FailOnWarning)}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("provider", completeProviders)
	return cmd
}

// completeCheckIDs completes --check and --skip values and explain's argument: check IDs and area names,
// matched case-insensitively, also after a comma (--check LEAK-LOG,TU<TAB>).
func completeCheckIDs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 && cmd.Name() != "explain" {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	want := strings.ToUpper(last)
	var out []string
	seenArea := map[string]bool{}
	for _, c := range conformance.Checks() {
		if strings.HasPrefix(c.ID, want) {
			out = append(out, done+c.ID+"\t"+c.Title)
		}
		if cmd.Name() != "explain" && !seenArea[c.Area] && strings.HasPrefix(strings.ToUpper(c.Area), want) {
			seenArea[c.Area] = true
			out = append(out, done+c.Area+"\tevery check of the "+c.Area+" area")
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// interruptGrace bounds how long a command interrupted by SIGINT or SIGTERM may take to stop its processes
// and clean up before it exits anyway.
const interruptGrace = 1500 * time.Millisecond

// interruptExit ends the process when an interrupted command did not stop within interruptGrace; tests
// replace it.
var interruptExit = func(code int) { os.Exit(code) }

// errCleanupStalled is printed when an interrupted command overran interruptGrace.
var errCleanupStalled = errors.New("interrupted: the run did not stop within its bound of 1.5s after the signal; the kit exits without waiting (its replicas and fakes run under wardens, which end them with it)")

// signalContext cancels on SIGINT/SIGTERM so that replicas are closed, never left behind. Whatever the run
// is waiting for then (a service that never answers, a replica that ignores its shutdown), the process ends
// within interruptGrace of the first signal, exit code 2; a second signal ends it at once (its default).
// Every process the kit starts runs under a warden (or dies with the kit), so an exit leaves none behind.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		if parent.Err() != nil {
			return
		}
		stop() // a second signal now has its default effect
		t := time.NewTimer(interruptGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			fmt.Fprintln(os.Stderr, "astrabox: "+errCleanupStalled.Error())
			interruptExit(ExitUndecided)
		}
	}()
	return ctx, func() { once.Do(func() { close(done) }); stop() }
}

func runConformance(parent context.Context, f *Factory, o *RunOptions) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := signalContext(parent)
	defer cancel()
	opts := conformance.Options{
		Project: o.Project, Python: o.Python, Provider: o.Provider, Checks: o.Checks, Skip: o.Skip, Jobs: o.Jobs,
		Getenv: f.Getenv, Verbose: f.Verbose, Version: f.Version, ConfigFile: o.ConfigFile, Set: o.Set,
	}
	if !f.Quiet {
		opts.Log = f.IO.Err
	}
	if f.IO.ErrTTY && !f.Quiet {
		opts.Progress = fitLine{w: f.IO.Err, width: max(f.IO.ErrWidth, 0)}
	}
	if o.SeedSet {
		seed := o.Seed
		opts.Seed = &seed
	}
	if err := o.Coverage.apply(&opts); err != nil {
		return err
	}
	eo := o.Explore
	if eo.LastFailed {
		// The failures the last exploration recorded are the run: their scenarios, judged by the checks
		// they failed, without the default suite first.
		done, err := lastFailedRun(f, o, &opts)
		if done || err != nil {
			return err
		}
		eo.LastFailed = false
	}
	explores, err := exploring(&eo)
	if err != nil {
		return err
	}
	opts.Explore = explores
	started := time.Now()
	fail := func(err error) error {
		if ctx.Err() != nil && parent.Err() == nil {
			return &exitError{code: ExitUndecided, err: errInterrupted}
		}
		return undecidedRun(f, o, started, err)
	}
	// The command owns the run's lifetime: open it, run the suite, explore, merge, suppress and mask, each
	// step a new report, then close it.
	live, err := conformance.Open(ctx, opts)
	if err != nil {
		return fail(err)
	}
	defer live.Close()
	rep, err := live.Suite(ctx)
	if err != nil {
		return fail(err)
	}
	var explored *explore.Result
	if explores && live.Runnable() {
		if explored, err = exploreLive(ctx, f, live, &eo, true, o.Jobs, o.Checks, o.Skip); err != nil {
			return fail(err)
		}
	}
	rep, warnings, err := finishReport(rep, explored, live.Secrets())
	if err != nil {
		return fail(err)
	}
	for _, w := range warnings {
		if !f.Quiet {
			fmt.Fprintln(f.IO.Err, "warning: "+safeErrorText(w))
		}
	}
	ro := reportOptions(f, o.SourceRoot, rep, started, time.Since(started))
	if err := writeReports(f, rep, o, ro); err != nil {
		return &exitError{code: ExitUndecided, err: err}
	}
	if o.onReport != nil {
		o.onReport(rep)
	}
	if explored != nil {
		for _, w := range explored.Warnings {
			fmt.Fprintln(f.IO.Err, f.IO.ErrStyles().Warn.Render("warning:")+" "+errorText(live.Secrets().Mask(w)))
		}
	}
	return verdictError(rep, o.Policy)
}

// finishReport turns the suite's report into the one the command writes, each step a new report and none
// changing the one it was given: the exploration merged in (when there was one), locations in an installed
// copy mapped back to the source, the provider's inline suppressions applied, and last every secret of the
// run masked in every string (the suppression reasons quote the provider's source). The warnings are the
// suppressions it could not honour, masked too.
func finishReport(rep *report.Report, explored *explore.Result, set *secrets.Set) (*report.Report, []string, error) {
	if explored != nil {
		rep = explore.Merge(rep, explored)
	}
	rep = mapInstalledSources(rep)
	rep, warnings := suppress.Apply(rep, func(id string) bool { _, ok := conformance.Lookup(id); return ok })
	rep, err := secrets.Masked(set, rep)
	if err != nil {
		return nil, nil, &conformance.UndecidedError{Err: fmt.Errorf("mask the report: %w", err)}
	}
	warnings, err = secrets.Masked(set, warnings)
	if err != nil {
		return nil, nil, &conformance.UndecidedError{Err: fmt.Errorf("mask the report: %w", err)}
	}
	return rep, warnings, nil
}

// lastFailedRun sets up `conformance run --last-failed`: the scenarios recorded in the failure store become
// the run's scenarios (no default suite), judged by the checks they failed unless --check chose others. When
// the last exploration recorded no failure it says so and the run ends (done, exit 0); a missing or
// unreadable record is an undecided run.
func lastFailedRun(f *Factory, o *RunOptions, opts *conformance.Options) (done bool, err error) {
	dir := o.Explore.FailuresDir
	if dir == "" {
		root := projectDir(o.Project)
		if o.Project == "" {
			if r, err := discovery.FindProjectRoot(root); err == nil {
				root = r
			}
		}
		dir = filepath.Join(root, ".astrabox", "failures")
	}
	scs, checks, err := explore.LastFailed(dir)
	if errors.Is(err, explore.ErrNothingRecorded) {
		if !f.Quiet {
			fmt.Fprintln(f.IO.Err, err)
		}
		return true, nil
	}
	if err != nil {
		return true, &exitError{code: ExitUndecided, err: err}
	}
	opts.Scenarios = scs
	if len(opts.Checks) == 0 {
		opts.Checks = checks
	}
	if !f.Quiet {
		fmt.Fprintf(f.IO.Err, "re-running the %d scenario(s) that failed %s in the last exploration (the default suite is not run)\n", len(scs), strings.Join(checks, ", "))
	}
	return false, nil
}

// undecidedRun ends a run the kit could not decide (exit 2): the JUnit outputs asked for (--junit, and
// --format junit) get one <error> test case with the error text, so a CI test view shows why the job stopped;
// the JSON and SARIF outputs (--json, --sarif, --format json or sarif) get their error documents, which name
// the interpreter when the provider did not load.
func undecidedRun(f *Factory, o *RunOptions, started time.Time, runErr error) error {
	j := report.JUnit{Root: sourceRoot(f, o.SourceRoot, projectDir(o.Project)), Started: started, Elapsed: time.Since(started)}
	msg := errorText(runErr.Error())
	u := report.Undecided{Command: "conformance run", Message: msg, Interpreter: undecidedInterpreter(runErr)}
	writers := map[report.Format]func(io.Writer) error{
		report.FormatJUnit: func(w io.Writer) error { return j.RenderError(w, u.Command, msg) },
		report.FormatJSON:  func(w io.Writer) error { return report.JSON{}.RenderError(w, u) },
		report.FormatSARIF: func(w io.Writer) error { return report.SARIF{}.RenderError(w, f.Version, u) },
	}
	var errs []error
	for _, extra := range []struct {
		format report.Format
		file   string
	}{{report.FormatJUnit, o.JUnit}, {report.FormatJSON, o.JSONFile}, {report.FormatSARIF, o.SARIF}} {
		if extra.file != "" {
			errs = append(errs, writeFile(extra.file, string(extra.format), writers[extra.format]))
		}
	}
	if write, ok := writers[report.Format(o.Format)]; ok {
		if o.Output != "" {
			errs = append(errs, writeFile(o.Output, o.Format, write))
		} else {
			errs = append(errs, write(f.IO.Out))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &exitError{code: ExitUndecided, err: errors.Join(runErr, err)}
	}
	return &exitError{code: ExitUndecided, err: runErr}
}

// undecidedInterpreter is the interpreter of a run that stopped because the provider did not load, as the
// undecided documents name it; nil for any other stop.
func undecidedInterpreter(err error) *report.Interpreter {
	var lf *conformance.LoadFailure
	if !errors.As(err, &lf) || lf.Python == nil {
		return nil
	}
	py := lf.Python
	return &report.Interpreter{Path: py.Path, Version: py.VersionString(), ChosenBy: errorText(py.Rule), Via: py.Via,
		Inherited: py.InheritedChoice(), PinWith: discovery.PinHint}
}

// reportOptions are the renderer options of a run's report: paths relative to the source root, the project
// file results without a location point at, and the run's start and wall time.
func reportOptions(f *Factory, flagRoot string, rep *report.Report, started time.Time, elapsed time.Duration) report.Options {
	return report.Options{
		Root: sourceRoot(f, flagRoot, rep.Provider.Project), Manifest: projectManifest(rep.Provider.Project),
		Started: started, Elapsed: elapsed,
	}
}

// writeReports renders the report on stdout (or --output) and to every extra file asked for. Locations in
// an installed copy of the provider (the project's .venv) are mapped back to its source first.
func writeReports(f *Factory, rep *report.Report, o *RunOptions, ro report.Options) error {
	rep = mapInstalledSources(rep)
	render := func(format report.Format, w io.Writer, color bool, width int) error {
		opts := ro
		opts.Styles, opts.Width = term.NewStyles(color), width
		r, err := report.New(format, opts)
		if err != nil {
			return err
		}
		return r.Render(w, rep)
	}
	format := report.Format(o.Format)
	if o.Output != "" {
		if err := writeFile(o.Output, "", func(w io.Writer) error { return render(format, w, false, term.DefaultWidth) }); err != nil {
			return err
		}
	} else if err := render(format, f.IO.Out, f.IO.ColorOut, f.IO.Width); err != nil {
		return err
	}
	for _, extra := range []struct {
		format report.Format
		file   string
	}{{report.FormatJSON, o.JSONFile}, {report.FormatJUnit, o.JUnit}, {report.FormatSARIF, o.SARIF}, {report.FormatGitHub, o.GitHub}, {report.FormatGitLab, o.GitLab}} {
		if extra.file == "" {
			continue
		}
		if err := writeFile(extra.file, string(extra.format), func(w io.Writer) error { return render(extra.format, w, false, term.DefaultWidth) }); err != nil {
			return err
		}
	}
	return writeCoverageFiles(f, rep, &o.Coverage, ro.Root)
}

// writeFile renders into a buffer and writes it to file; what names the report in the error ("" for the
// --output file).
func writeFile(file, what string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		if what == "" {
			return fmt.Errorf("write %s: %w", file, err)
		}
		return fmt.Errorf("write the %s report to %s: %w", what, file, err)
	}
	return nil
}

// ListOptions are the options of `astrabox conformance list`.
type ListOptions struct {
	// Format is text or json, validated and lower-cased before the run.
	Format string
}

// NewCmdConformanceList builds `astrabox conformance list`; runF, when set, replaces the run.
func NewCmdConformanceList(f *Factory, runF func(*ListOptions) error) *cobra.Command {
	o := &ListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every check with its severity and the clauses it covers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := parseFormat(&o.Format, report.TextOrJSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return listChecks(f, o)
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "text", "output format: text or json")
	return cmd
}

// listChecks prints every check of the check table as text or JSON.
func listChecks(f *Factory, o *ListOptions) error {
	checks := conformance.Checks()
	if o.Format == "json" {
		type row struct {
			ID       string   `json:"id"`
			Title    string   `json:"title"`
			Area     string   `json:"area"`
			Severity string   `json:"severity"`
			Clauses  []string `json:"clauses"`
			Kind     string   `json:"kind"`
			Warning  string   `json:"warning_only,omitempty"`
		}
		rows := []row{}
		for _, c := range checks {
			kind := "clause"
			if c.Kind == conformance.KindKitRule {
				kind = string(conformance.KindKitRule)
			}
			rows = append(rows, row{c.ID, c.Title, c.Area, string(c.Severity), append([]string{}, c.Clauses...), kind, c.WarningOnly})
		}
		return writeJSON(f.IO.Out, rows)
	}
	writeCheckList(f.IO.Out, f.IO.OutStyles(), checks, f.IO.Width)
	return nil
}

// ExplainOptions are the options of `astrabox conformance explain`.
type ExplainOptions struct {
	// CheckID is the check to explain, as given.
	CheckID string
}

// NewCmdConformanceExplain builds `astrabox conformance explain`; runF, when set, replaces the run.
func NewCmdConformanceExplain(f *Factory, runF func(*ExplainOptions) error) *cobra.Command {
	o := &ExplainOptions{}
	return &cobra.Command{
		Use:               "explain CHECK-ID",
		Short:             "Explain a check: the clause, why it matters, a wrong and a right snippet",
		Args:              exactArgs("CHECK-ID", "see `astrabox conformance list` for the IDs"),
		ValidArgsFunction: completeCheckIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.CheckID = args[0]
			if runF != nil {
				return runF(o)
			}
			return explainCheck(f, o)
		},
	}
}

// explainCheck prints a check's explanation, or a usage error with suggestions for an unknown ID.
func explainCheck(f *Factory, o *ExplainOptions) error {
	c, ok := conformance.Lookup(o.CheckID)
	if !ok {
		msg := fmt.Sprintf("unknown check %q", o.CheckID)
		if s := conformance.Suggest(o.CheckID); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, ", ") + "?"
		}
		return usagef("%s (see `astrabox conformance list`)", msg)
	}
	fmt.Fprint(f.IO.Out, conformance.ExplainWidth(c, f.IO.OutStyles(), f.IO.Width))
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// asUndecided wraps an error as exit code 2 unless it already carries a code.
func asUndecided(err error) error {
	var ec exitCoder
	if errors.As(err, &ec) {
		return err
	}
	return &exitError{code: ExitUndecided, err: err}
}

// sourceRoot is the directory code-scanning paths are relative to: the flag, else GITHUB_WORKSPACE (GitHub
// Actions) or CI_PROJECT_DIR (GitLab CI) when it holds the project, else the git repository holding the
// project, else the project itself.
func sourceRoot(f *Factory, flag, project string) string {
	if flag != "" {
		if abs, err := filepath.Abs(flag); err == nil {
			return abs
		}
		return flag
	}
	if project == "" {
		return ""
	}
	for _, ws := range []string{f.Getenv("GITHUB_WORKSPACE"), f.Getenv("CI_PROJECT_DIR")} {
		if ws != "" && within(project, ws) {
			return ws
		}
	}
	for dir := project; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		if parent := filepath.Dir(dir); parent == dir {
			break
		}
	}
	return project
}

func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && !strings.HasPrefix(rel, "..")
}
