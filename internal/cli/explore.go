package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// ExploreOptions are the exploration flags shared by `conformance run` and `simulate explore`.
type ExploreOptions struct {
	N            int
	Shard        string
	LastFailed   bool
	FailuresDir  string
	ShrinkBudget int
	// Fresh ignores the saved corpus of guided exploration (--explore-fresh).
	Fresh bool
}

func exploreFlags(cmd *cobra.Command, o *ExploreOptions, defaultN int) {
	cmd.Flags().IntVar(&o.N, "explore", defaultN, "after the default suite, judge N generated scenarios (seeded by --seed), shrinking every failure")
	cmd.Flags().StringVar(&o.Shard, "shard", "", "run only shard I of N of the explored scenarios (I/N, e.g. 2/4), for CI matrix jobs")
	cmd.Flags().BoolVar(&o.LastFailed, "last-failed", false, "re-run only the scenarios that failed in the last exploration")
	cmd.Flags().StringVar(&o.FailuresDir, "failures-dir", "", "where shrunk failures are written (default: .astrabox/failures in the project)")
	cmd.Flags().BoolVar(&o.Fresh, "explore-fresh", false, "explore without the corpus of earlier runs (.astrabox/corpus), and leave it as it is")
	cmd.Flags().IntVar(&o.ShrinkBudget, "shrink-budget", 60, "scenario runs spent shrinking one failure")
}

func parseShard(s string) (int, int, error) {
	if s == "" {
		return 1, 1, nil
	}
	parts := strings.Split(s, "/")
	if len(parts) != 2 {
		return 0, 0, usagef("--shard %q: use I/N, for example 2/4", s)
	}
	i, err1 := strconv.Atoi(parts[0])
	n, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, usagef("--shard %q: use I/N with 1 <= I <= N, for example 2/4", s)
	}
	return i, n, nil
}

// exploring tells whether the flags ask for exploration, after checking --shard.
func exploring(eo *ExploreOptions) (bool, error) {
	if eo.N <= 0 && !eo.LastFailed {
		return false, nil
	}
	if _, _, err := parseShard(eo.Shard); err != nil {
		return false, err
	}
	return true, nil
}

// exploreLive explores with an opened run's warm workers and returns the result (with --last-failed and
// nothing recorded, an empty one); summary prints the exploration summary on stderr. The caller merges the
// result into its report and asks the run whether its services are still alive.
func exploreLive(ctx context.Context, f *Factory, live *conformance.Live, eo *ExploreOptions, summary bool, jobs int, checks, skip []string) (*explore.Result, error) {
	si, sn, err := parseShard(eo.Shard)
	if err != nil {
		return nil, err
	}
	env := live.Env
	o := explore.Options{N: eo.N, Seed: env.Seed, Jobs: jobs, ShardIndex: si, ShardCount: sn, Checks: checks, Skip: skip,
		Skipped: env.Target.Settings.Skip, FailuresDir: eo.FailuresDir, ShrinkBudget: eo.ShrinkBudget, Project: env.Target.Project.Dir, Fresh: eo.Fresh}
	if !f.Quiet {
		o.Log = f.IO.Err
	}
	if o.FailuresDir == "" {
		o.FailuresDir = env.Target.Project.Dir + "/.astrabox/failures"
	}
	if eo.LastFailed {
		scs, _, err := explore.LastFailed(o.FailuresDir)
		if errors.Is(err, explore.ErrNothingRecorded) {
			if !f.Quiet {
				fmt.Fprintln(f.IO.Err, err)
			}
			return &explore.Result{Seed: env.Seed}, nil
		}
		if err != nil {
			return nil, &exitError{code: ExitUndecided, err: err}
		}
		o.Scenarios = scs
	}
	if f.IO.ErrTTY && !f.Quiet {
		o.Progress = fitLine{w: f.IO.Err, width: max(f.IO.ErrWidth, 0)}
	}
	if o.Jobs <= 0 {
		o.Jobs = 2
	}
	r, err := explore.Explore(ctx, env, live.Workers, o)
	if err != nil {
		return nil, &exitError{code: ExitUndecided, err: live.MaskError(fmt.Errorf("exploration: %w", err))}
	}
	if err := live.Alive(); err != nil {
		return nil, err
	}
	if summary && !f.Quiet {
		var buf bytes.Buffer
		writeExploreSummary(&buf, r)
		_, _ = io.WriteString(f.IO.Err, live.Secrets().Mask(buf.String()))
	}
	return r, nil
}

func writeExploreSummary(w io.Writer, r *explore.Result) {
	rate := 0.0
	if r.Elapsed > 0 {
		rate = float64(r.Callbacks) / r.Elapsed.Seconds()
	}
	writeWrapped(w, fmt.Sprintf("explored %d scenario(s) with seed %d in %s: %d callbacks (%.0f/s), %d failing check(s)",
		r.Scenarios, r.Seed, r.Elapsed.Round(1e6), r.Callbacks, rate, len(r.Failures)), "", "  ")
	if r.Guided {
		writeWrapped(w, fmt.Sprintf("guided by coverage: %d lines and branch directions reached; %d scenario(s) replayed the corpus, %d varied seeds; corpus now %d seed(s), %d favoured",
			r.Reached, r.Replayed, r.Mutated, r.Seeds, r.Favoured), "  ", "    ")
		if len(r.Unreached) > 0 {
			writeWrapped(w, fmt.Sprintf("no scenario called %s, which the provider implements (exploration drew the steps that call them more often)", joinCallbacks(r.Unreached)), "  ", "    ")
		}
	}
	for _, e := range r.Errors {
		writeWrapped(w, fmt.Sprintf("could not run %s", e), "  ", "    ")
	}
	for _, fl := range r.Failures {
		state := "failed"
		if fl.Flaky {
			state = "flaky"
		}
		writeWrapped(w, fmt.Sprintf("%s %s in scenario %d, shrunk to %d step(s)", fl.Check, state, fl.Index, len(fl.Shrunk)), "  ", "    ")
		writeCommand(w, "    replay: ", fl.Command)
	}
}

// summaryWidth is the width the exploration summary wraps at, so that it reads in an 80-column terminal
// and in a CI log alike.
const summaryWidth = 80

// writeWrapped writes text wrapped at spaces to summaryWidth columns, the first line after first and the
// others after rest.
func writeWrapped(w io.Writer, text, first, rest string) {
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		switch {
		case empty:
			line += word
		case ansi.StringWidth(line)+1+ansi.StringWidth(word) > summaryWidth:
			fmt.Fprintln(w, line)
			line = rest + word
		default:
			line += " " + word
		}
		empty = false
	}
	fmt.Fprintln(w, line)
}

// writeCommand writes a shell command after prefix, broken at spaces with a trailing backslash when it is
// wider than summaryWidth, so that it still pastes into a shell as one command.
func writeCommand(w io.Writer, prefix, cmd string) {
	indent := strings.Repeat(" ", len(prefix)+2)
	line, out := prefix, []string{}
	for i, word := range strings.Fields(cmd) {
		switch {
		case i == 0:
			line += word
		case ansi.StringWidth(line)+1+ansi.StringWidth(word)+2 > summaryWidth:
			out = append(out, line+" \\")
			line = indent + word
		default:
			line += " " + word
		}
	}
	out = append(out, line)
	fmt.Fprintln(w, strings.Join(out, "\n"))
}

// SimExploreOptions are the options of `astrabox simulate explore`.
type SimExploreOptions struct {
	// Sim holds the flags shared with the other simulate commands: the project, interpreter, provider,
	// --format (text or json, validated and lower-cased before the run) and --seed.
	Sim *SimOptions
	// Explore is the exploration flags; at least --explore N or --last-failed is given, and --shard is
	// valid, before the run.
	Explore ExploreOptions
	// Checks and Skip select the checks that judge each scenario; Jobs is the worker sets at once.
	Checks, Skip []string
	Jobs         int
}

// NewCmdSimulateExplore builds `astrabox simulate explore` under a simulate command whose shared flags fill
// so; runF, when set, replaces the run.
func NewCmdSimulateExplore(f *Factory, so *SimOptions, runF func(*SimExploreOptions) error) *cobra.Command {
	o := &SimExploreOptions{Sim: so}
	cmd := &cobra.Command{
		Use:   "explore",
		Short: "Judge generated lifecycle scenarios with faults, shrinking and saving every failure",
		Long: `Generate N seeded lifecycle scenarios (platform steps and faults, only in orders the platform
could produce), run each against the provider, judge every history with the conformance checks, shrink
each failure to a smallest scenario that still fails the same check, save it as YAML and print the
command that replays it. A failure whose replay does not fail the same way is reported as flaky.`,
		Example: `  astrabox simulate explore --scenarios 500 --seed 7
  astrabox simulate explore --last-failed
  astrabox simulate explore --scenarios 2000 --shard 1/4 --jobs 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := parseFormat(&so.Format, report.TextOrJSON); err != nil {
				return err
			}
			if o.Explore.N <= 0 && !o.Explore.LastFailed {
				return usagef("nothing to explore: give --scenarios N or --last-failed")
			}
			if _, _, err := parseShard(o.Explore.Shard); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runSimulateExplore(cmd.Context(), f, o)
		},
	}
	exploreFlags(cmd, &o.Explore, 100)
	// --explore N reads as "explore N" after `simulate explore`; --scenarios says what N counts. --explore
	// stays as a deprecated alias so that existing scripts keep working.
	cmd.Flags().IntVar(&o.Explore.N, "scenarios", 100, "judge N generated scenarios (seeded by --seed), shrinking every failure")
	_ = cmd.Flags().MarkDeprecated("explore", "use --scenarios N")
	cmd.Flags().StringSliceVar(&o.Checks, "check", nil, "judge only checks matching these IDs, globs or areas")
	cmd.Flags().StringSliceVar(&o.Skip, "skip", nil, "do not judge checks matching these IDs, globs or areas")
	cmd.Flags().IntVarP(&o.Jobs, "jobs", "j", 0, "scenarios run at once, each on its own replica processes and its own instance of every declared service (default: the number of cores)")
	_ = cmd.RegisterFlagCompletionFunc("check", completeCheckIDs)
	return cmd
}

// runSimulateExplore opens a run, explores with its warm workers (no default suite), closes it and prints
// the result.
func runSimulateExplore(parent context.Context, f *Factory, o *SimExploreOptions) error {
	if parent == nil {
		parent = context.Background()
	}
	if _, err := exploring(&o.Explore); err != nil {
		return err
	}
	ctx, cancel := signalContext(parent)
	defer cancel()
	so := o.Sim
	seed := so.Seed
	undecidedErr := func(err error) error {
		if ctx.Err() != nil && parent.Err() == nil {
			return &exitError{code: ExitUndecided, err: errInterrupted}
		}
		return asUndecided(err)
	}
	live, err := conformance.Open(ctx, conformance.Options{Project: so.Project, Python: so.Python, Provider: so.Provider, Seed: &seed,
		Checks: o.Checks, Skip: o.Skip, Jobs: o.Jobs, Getenv: f.Getenv, Explore: true, Version: f.Version})
	if err != nil {
		return undecidedErr(err)
	}
	defer live.Close()
	if !live.Runnable() {
		return undecidedErr(errNothingToExplore)
	}
	res, err := exploreLive(ctx, f, live, &o.Explore, false, o.Jobs, o.Checks, o.Skip)
	if err != nil {
		return undecidedErr(err)
	}
	return writeExploreResult(f, so.Format, res, live.Secrets())
}

// errNothingToExplore is the error of `simulate explore` on a provider that cannot run scenarios
// (`astrabox conformance run` says why).
var errNothingToExplore = errors.New("nothing to explore: the provider is not an instantiable subclass of astrabox.seams.RuntimePreparationProvider, so no scenario can run")

// writeExploreResult prints an exploration's result as JSON or as the summary, then its warnings on stderr,
// every secret of the run (set) masked in what it prints (a scenario the kit could not run can carry a
// replica's error); the error is errFailed when a check failed.
func writeExploreResult(f *Factory, format string, res *explore.Result, set *secrets.Set) error {
	var buf bytes.Buffer
	if format == string(report.FormatJSON) {
		if err := writeJSON(&buf, res); err != nil {
			return err
		}
	} else {
		writeExploreSummary(&buf, res)
	}
	if _, err := io.WriteString(f.IO.Out, set.Mask(buf.String())); err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(f.IO.Err, f.IO.ErrStyles().Warn.Render("warning:")+" "+errorText(set.Mask(w)))
	}
	if len(res.Failures) > 0 {
		return errFailed
	}
	return nil
}

// joinCallbacks lists callbacks for a summary line.
func joinCallbacks(cbs []simulate.Callback) string {
	names := make([]string, len(cbs))
	for i, cb := range cbs {
		names[i] = string(cb)
	}
	return strings.Join(names, ", ")
}
