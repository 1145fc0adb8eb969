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
	"syscall"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/term"
)

func newConformanceCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run, list and explain the conformance checks",
	}
	cmd.AddCommand(newConformanceRunCmd(f, nil), newConformanceListCmd(f), newConformanceExplainCmd(f))
	return cmd
}

// RunOptions are the options of `astrabox conformance run`.
type RunOptions struct {
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
	Jobs     int
	Explore  ExploreOptions
	// SourceRoot is the directory SARIF and GitHub annotation paths are relative to.
	SourceRoot string
}

// projectFlags adds the flags every provider-facing command shares.
func projectFlags(cmd *cobra.Command, project, python, provider *string) {
	cmd.Flags().StringVar(project, "project", "", "provider project directory (default: the nearest directory upward holding pyproject.toml or setup.cfg)")
	cmd.Flags().StringVar(python, "python", "", "Python interpreter to load the provider with (default: ASTRABOX_PYTHON, VIRTUAL_ENV, .venv, CONDA_PREFIX, then python3 on PATH)")
	cmd.Flags().StringVar(provider, "provider", "", "pick one provider by entry-point name when several are declared (the platform itself would refuse to start)")
}

func newConformanceRunCmd(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	o := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the conformance suite against the project's provider",
		Long: `Run the default suite of lifecycle scenarios against the provider declared by the project and
decide every conformance check over what happened.

Exit status: 0 when no check failed (warnings allowed), 1 when at least one check failed, 2 when the
kit could not decide (bad usage, unreadable project, provider that does not load, conflicting
providers).`,
		Example: `  astrabox conformance run
  astrabox conformance run --project examples/providers/reference --format json
  astrabox conformance run --junit junit.xml --sarif astrabox.sarif
  astrabox conformance run --check 'TURN-*' --skip TURN-VALIDITY-FRESH`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.SeedSet = cmd.Flags().Changed("seed")
			if runF != nil {
				return runF(o)
			}
			return runConformance(cmd.Context(), f, o)
		},
	}
	projectFlags(cmd, &o.Project, &o.Python, &o.Provider)
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "seed of every scenario (also from [tool.astrabox] seed)")
	cmd.Flags().StringSliceVar(&o.Checks, "check", nil, "run only checks matching these IDs, globs (SESSION-*) or areas")
	cmd.Flags().StringSliceVar(&o.Skip, "skip", nil, "skip checks matching these IDs, globs or areas")
	cmd.Flags().StringVarP(&o.Format, "format", "f", "text", "format on stdout: "+strings.Join(report.Formats(), ", "))
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "write the --format output to this file instead of stdout")
	cmd.Flags().StringVar(&o.JSONFile, "json", "", "also write the JSON report to this file")
	cmd.Flags().StringVar(&o.JUnit, "junit", "", "also write a JUnit XML report to this file")
	cmd.Flags().StringVar(&o.SARIF, "sarif", "", "also write a SARIF 2.1.0 report to this file")
	cmd.Flags().StringVar(&o.GitHub, "github", "", "also write GitHub workflow annotations to this file")
	cmd.Flags().IntVarP(&o.Jobs, "jobs", "j", 0, "scenarios run at once on independent replica sets (default: the number of cores)")
	exploreFlags(cmd, &o.Explore, 0)
	cmd.Flags().StringVar(&o.SourceRoot, "source-root", "", "directory SARIF and GitHub annotation paths are relative to (default: GITHUB_WORKSPACE, else the git repository holding the project, else the project)")
	_ = cmd.RegisterFlagCompletionFunc("check", completeCheckIDs)
	_ = cmd.RegisterFlagCompletionFunc("skip", completeCheckIDs)
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(report.Formats(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("provider", completeProviders)
	return cmd
}

func completeCheckIDs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, c := range conformance.Checks() {
		if strings.HasPrefix(c.ID, strings.ToUpper(toComplete)) {
			out = append(out, c.ID+"\t"+c.Title)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// signalContext cancels on SIGINT/SIGTERM so that replicas are closed, never left behind.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

func runConformance(parent context.Context, f *Factory, o *RunOptions) error {
	if _, err := report.For(o.Format, term.Styles{}, 80); err != nil {
		return usagef("%v", err)
	}
	ctx, cancel := signalContext(parent)
	defer cancel()
	opts := conformance.Options{
		Project: o.Project, Python: o.Python, Provider: o.Provider, Checks: o.Checks, Skip: o.Skip, Jobs: o.Jobs,
		Getenv: f.Getenv, Verbose: f.Verbose, Version: f.Version,
	}
	if !f.Quiet {
		opts.Log = f.IO.Err
	}
	if o.SeedSet {
		seed := o.Seed
		opts.Seed = &seed
	}
	var explored *explore.Result
	hook, err := exploreHook(f, &o.Explore, true, o.Jobs, o.Checks, o.Skip, &explored)
	if err != nil {
		return err
	}
	opts.After = hook
	rep, err := conformance.Run(ctx, opts)
	if err != nil {
		return &exitError{code: ExitUndecided, err: err}
	}
	if err := writeReports(f, rep, o); err != nil {
		return &exitError{code: ExitUndecided, err: err}
	}
	if explored != nil {
		for _, w := range explored.Warnings {
			fmt.Fprintln(f.IO.Err, f.IO.ErrStyles().Warn.Render("warning:")+" "+errorText(w))
		}
	}
	if rep.HasFailures() {
		return errFailed
	}
	return nil
}

// writeReports renders the report on stdout (or --output) and to every extra file asked for.
func writeReports(f *Factory, rep *report.Report, o *RunOptions) error {
	root := sourceRoot(f, o.SourceRoot, rep.Provider.Project)
	render := func(format string, w io.Writer, color bool, width int) error {
		r, err := report.For(format, term.NewStyles(color), width)
		if err != nil {
			return err
		}
		switch format {
		case "sarif":
			return (&report.SARIF{Root: root}).Render(w, rebase(rep, root))
		case "github":
			return (&report.GitHub{Root: root}).Render(w, rebase(rep, root))
		}
		return r.Render(w, rep)
	}
	if o.Output != "" {
		var buf bytes.Buffer
		if err := render(o.Format, &buf, false, 80); err != nil {
			return err
		}
		if err := os.WriteFile(o.Output, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", o.Output, err)
		}
	} else if err := render(o.Format, f.IO.Out, f.IO.ColorOut, f.IO.Width); err != nil {
		return err
	}
	for format, file := range map[string]string{"json": o.JSONFile, "junit": o.JUnit, "sarif": o.SARIF, "github": o.GitHub} {
		if file == "" {
			continue
		}
		var buf bytes.Buffer
		if err := render(format, &buf, false, 80); err != nil {
			return err
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write the %s report to %s: %w", format, file, err)
		}
	}
	return nil
}

func newConformanceListCmd(f *Factory) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every check with its severity and the clauses it covers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			checks := conformance.Checks()
			switch format {
			case "json":
				type row struct {
					ID       string   `json:"id"`
					Title    string   `json:"title"`
					Area     string   `json:"area"`
					Severity string   `json:"severity"`
					Clauses  []string `json:"clauses"`
					Warning  string   `json:"warning_only,omitempty"`
				}
				rows := []row{}
				for _, c := range checks {
					rows = append(rows, row{c.ID, c.Title, c.Area, string(c.Severity), c.Clauses, c.WarningOnly})
				}
				return writeJSON(f.IO.Out, rows)
			case "text":
				s := f.IO.OutStyles()
				for _, c := range checks {
					fmt.Fprintf(f.IO.Out, "%-24s %-8s %-13s %s\n", s.ID.Render(c.ID), c.Severity, c.Area, c.Title)
				}
				return nil
			}
			return usagef("unknown format %q; use text or json", format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func newConformanceExplainCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:               "explain CHECK-ID",
		Short:             "Explain a check: the clause, why it matters, a wrong and a right snippet",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeCheckIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ok := conformance.Lookup(args[0])
			if !ok {
				msg := fmt.Sprintf("unknown check %q", args[0])
				if s := conformance.Suggest(args[0]); len(s) > 0 {
					msg += "; did you mean " + strings.Join(s, ", ") + "?"
				}
				return usagef("%s (see `astrabox conformance list`)", msg)
			}
			fmt.Fprint(f.IO.Out, conformance.Explain(c, f.IO.OutStyles()))
			return nil
		},
	}
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
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: ExitUndecided, err: err}
}

// sourceRoot is the directory code-scanning paths are relative to: the flag, else GITHUB_WORKSPACE when it
// holds the project, else the git repository holding the project, else the project itself.
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
	if ws := f.Getenv("GITHUB_WORKSPACE"); ws != "" && within(project, ws) {
		return ws
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

// rebase returns a copy of the report whose project-relative locations are relative to root instead.
func rebase(rep *report.Report, root string) *report.Report {
	project := rep.Provider.Project
	if root == "" || project == "" || root == project {
		return rep
	}
	move := func(l *report.Location) *report.Location {
		if l == nil || filepath.IsAbs(l.Path) {
			return l
		}
		out := *l
		if rel, err := filepath.Rel(root, filepath.Join(project, filepath.FromSlash(l.Path))); err == nil && !strings.HasPrefix(rel, "..") {
			out.Path = filepath.ToSlash(rel)
		} else {
			out.Path = filepath.Join(project, filepath.FromSlash(l.Path))
		}
		return &out
	}
	c := *rep
	c.Results = make([]report.Result, len(rep.Results))
	for i, r := range rep.Results {
		r.Location = move(r.Location)
		ev := make([]report.Evidence, len(r.Evidence))
		for j, e := range r.Evidence {
			e.Location = move(e.Location)
			ev[j] = e
		}
		r.Evidence = ev
		c.Results[i] = r
	}
	return &c
}
