// Package cli holds astrabox's cobra commands: flag parsing, output selection and exit codes. Domain logic
// lives in the packages the commands call.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// Exit codes of the astrabox command.
const (
	ExitOK        = 0
	ExitFailed    = 1
	ExitUndecided = 2
)

// Factory carries what every command needs: the I/O bundle and global options. Tests build one with
// term.Test().
type Factory struct {
	IO      *term.IO
	Getenv  func(string) string
	Verbose bool
	Quiet   bool
	// Color is the --color mode: auto, always or never.
	Color string
	// Version is the module version shown by `astrabox version` and in reports.
	Version string
}

// exitCoder is an error that carries the process exit code it ends a run with. Typed errors of the packages
// below cli (discovery's errors, conformance.UndecidedError) and cli's own exitError and usageError
// implement it; cli reads the code from the error chain and never from the message text.
type exitCoder interface {
	error
	ExitCode() int
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the code the run exits with.
func (e *exitError) ExitCode() int { return e.code }

// exitCode is the exit code err carries (the first in its chain), or ExitUndecided for an error that carries
// none (cobra's own, such as an unknown command).
func exitCode(err error) int {
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return ExitUndecided
}

// failed is the error for "at least one check failed": nothing more to print, exit 1.
var errFailed = &exitError{code: ExitFailed}

// usageError marks bad usage (exit 2, usage shown).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// ExitCode is 2: bad usage decides nothing.
func (e *usageError) ExitCode() int { return ExitUndecided }

func usagef(format string, args ...any) error { return &usageError{fmt.Errorf(format, args...)} }

// NewRootCmd builds the astrabox command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "astrabox",
		Short: "Conformance kit and simulator for astrabox runtime preparation providers",
		Long: `astrabox loads a runtime preparation provider from its pyproject entry point, plays the
platform's side of every lifecycle sequence against fake sandboxes and a deployment double, and
reports every breach of the contract with its clause, the steps that show it and the provider's
file and line.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       f.Version,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if f.Verbose && f.Quiet {
				return usagef("--verbose and --quiet cannot be used together")
			}
			return applyColor(f, f.Color)
		},
	}
	root.SetVersionTemplate("astrabox {{.Version}}\n")
	root.PersistentFlags().BoolVarP(&f.Verbose, "verbose", "v", false, "say more on stderr: which interpreter and provider were chosen and why, each platform step")
	root.PersistentFlags().BoolVarP(&f.Quiet, "quiet", "q", false, "print only errors and the requested data")
	root.PersistentFlags().StringVar(&f.Color, "color", "auto", "colour output: auto (from NO_COLOR, FORCE_COLOR and the terminal), always or never")
	_ = root.RegisterFlagCompletionFunc("color", cobra.FixedCompletions(colorModes, cobra.ShellCompDirectiveNoFileComp))
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.Err)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		//lint:ignore ST1005 a usage error is printed as it is, with cobra's own second line
		return &usageError{fmt.Errorf("%s\nRun '%s --help' for usage.", cleanFlagError(err.Error()), cmd.CommandPath())}
	})
	root.AddCommand(
		NewCmdConformance(f),
		newProvidersCmd(f),
		newSimulateCmd(f),
		NewCmdSDK(f),
		newReportCmd(f),
		newVersionCmd(f),
		newInitCmd(f),
		NewCmdImage(f),
		NewCmdStubs(f),
		newEnvironmentTopic(),
	)
	root.SuggestionsMinimumDistance = 2
	fitHelpToWidth(root, f.IO.Width)
	return root
}

// Execute runs the command line and returns the process exit code.
func Execute(args []string) int {
	f := &Factory{IO: term.System(), Getenv: os.Getenv, Version: moduleVersion()}
	return Run(f, args)
}

// Run executes args with a factory and returns the exit code; errors are printed on the factory's stderr.
func Run(f *Factory, args []string) int {
	root := NewRootCmd(f)
	// Never nil: cobra reads os.Args when given nil, and a caller that passes no arguments means none.
	root.SetArgs(append([]string{}, args...))
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	return reportError(f.IO.Err, f.IO.ErrStyles(), err)
}

func reportError(w io.Writer, s term.Styles, err error) int {
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return ee.code
	}
	fmt.Fprintln(w, s.Fail.Render("error:")+" "+errorText(err.Error()))
	return exitCode(err)
}

// moduleVersion reads the module version and VCS revision from the build info.
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	return v
}

// buildInfo describes the binary for `astrabox version`.
func buildInfo() (version, commit, goVersion string, dirty bool) {
	version, commit, goVersion = "(devel)", "unknown", "unknown"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if info.Main.Version != "" {
		version = info.Main.Version
	}
	goVersion = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return
}

// VersionOptions are the options of `astrabox version`.
type VersionOptions struct {
	// Format is text or json, validated and lower-cased before the run.
	Format string
}

func newVersionCmd(f *Factory) *cobra.Command { return NewCmdVersion(f, nil) }

// NewCmdVersion builds `astrabox version`; runF, when set, replaces the run.
func NewCmdVersion(f *Factory, runF func(*VersionOptions) error) *cobra.Command {
	o := &VersionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the kit's version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := parseFormat(&o.Format, report.TextOrJSON); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			v, c, g, dirty := buildInfo()
			return writeVersion(f.IO.Out, o.Format, v, c, g, dirty)
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "text", "output format: text or json")
	return cmd
}

// writeVersion prints the kit's version, commit and Go version as text or JSON.
func writeVersion(w io.Writer, format, version, commit, goVersion string, dirty bool) error {
	if format == "json" {
		return writeJSON(w, map[string]any{"version": version, "commit": commit, "go": goVersion, "modified": dirty})
	}
	suffix := ""
	if dirty {
		suffix = " (modified)"
	}
	_, err := fmt.Fprintf(w, "astrabox %s\ncommit %s%s\n%s\n", version, commit, suffix, goVersion)
	return err
}
