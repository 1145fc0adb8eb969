package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/wrapper"
)

// CheckWrapperOptions are the options of `astrabox image check-wrapper`.
type CheckWrapperOptions struct {
	// Path is the wrapper script to check, as given.
	Path string
	// Format is text or json, validated and lower-cased before the run.
	Format string
	// Timeout bounds each run of the wrapper (positive).
	Timeout time.Duration
	// RealCLI is the real CLI the wrapper runs by a fixed path ("" : a stub stands in for it).
	RealCLI string
}

// NewCmdImage builds `astrabox image` and its subcommands.
func NewCmdImage(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Check what a sandbox image must bring with it",
		Long: `Check the parts of a sandbox image that a provider cannot supply itself. Wrappers and system
services must be baked into the image: a provider cannot retrofit them into a box (IMAGE-NO-RETROFIT).

A CLI wrapper finds the real CLI through the ASTRABOX_REAL_CLI environment variable when it is set, and
otherwise runs "claude" from PATH.`,
		Example: `  astrabox image check-wrapper images/agent/claude-wrapper.sh`,
	}
	cmd.AddCommand(NewCmdImageCheckWrapper(f, nil))
	return cmd
}

// NewCmdImageCheckWrapper builds `astrabox image check-wrapper`; runF, when set, replaces the run.
func NewCmdImageCheckWrapper(f *Factory, runF func(*CheckWrapperOptions) error) *cobra.Command {
	o := &CheckWrapperOptions{}
	cmd := &cobra.Command{
		Use:   "check-wrapper PATH",
		Short: "Check that an image's CLI wrapper passes the SDK's version probe through (SESSION-CLI-PROBE)",
		Long: `Check an image's CLI wrapper script against clause SESSION-CLI-PROBE: the Claude Agent SDK
probes the CLI with "claude -v" before it starts it, without the Session's environment, so a wrapper
that gates the CLI on Session material must pass -v and --version through unchanged.

The wrapper is run three times, each with a minimal environment that carries no Session material
(PATH, HOME set to an empty temporary directory, LANG=C.UTF-8) and a stub of the real CLI that records
the arguments it receives and prints a known version line:

  PATH -v           passes when the stub saw exactly -v, the wrapper exited 0 and stdout is exactly
                    the stub's version line
  PATH --version    the same with --version
  PATH -p hello     passes when the wrapper is gated: the stub was not reached

The wrapper finds the real CLI through the ASTRABOX_REAL_CLI environment variable when it is set, and
otherwise runs "claude" from PATH; the check points the variable at the stub and puts the stub first on
PATH, so either convention reaches it.

A production wrapper that runs the CLI by a fixed path (exec /opt/claude/bin/claude "$@") is checked
unchanged with --real-cli PATH, the path it runs, which must hold the real Claude CLI on this machine: no
stub is written; the check first runs PATH -v and PATH --version itself, a version probe passes when the
wrapper exits 0 and its stdout is exactly the real CLI's own answer, and PATH -p hello passes when the
real CLI left no state (~/.claude.json, ~/.claude) in the run's empty HOME, which it writes whenever it
starts for anything but a version probe. Each run is bounded by --timeout, after which the wrapper and
everything it started are killed; at most 64 KiB of each output is kept.

Exit status: 0 when every probe passed, 1 when a probe failed, 2 when the wrapper is missing, not
executable or cannot be started, or on bad usage.`,
		Example: `  astrabox image check-wrapper images/agent/claude-wrapper.sh
  astrabox image check-wrapper --format json ./bin/claude
  astrabox image check-wrapper --timeout 10s /usr/local/bin/claude
  astrabox image check-wrapper --real-cli /opt/claude/bin/claude image/claude-wrapper`,
		Args: exactArgs("WRAPPER path", "for example images/agent/claude-wrapper.sh"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			if err := parseFormat(&o.Format, report.TextOrJSON); err != nil {
				return err
			}
			if o.Timeout <= 0 {
				return usagef("--timeout must be positive, not %s", o.Timeout)
			}
			if runF != nil {
				return runF(o)
			}
			return runCheckWrapper(cmd, f, o)
		},
	}
	cmd.Flags().StringVarP(&o.Format, "format", "f", "text", "output format: text or json")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", wrapper.DefaultTimeout, "bound on each run of the wrapper")
	cmd.Flags().StringVar(&o.RealCLI, "real-cli", "", "the real CLI the wrapper runs by a fixed path: check the wrapper unchanged against it instead of a stub")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(report.TextOrJSON.Names(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runCheckWrapper(cmd *cobra.Command, f *Factory, o *CheckWrapperOptions) error {
	ctx, cancel := signalContext(cmd.Context())
	defer cancel()
	res, err := wrapper.Check(ctx, wrapper.Options{Path: o.Path, Timeout: o.Timeout, RealCLI: o.RealCLI})
	if err != nil {
		var ue *wrapper.UnusableError
		if errors.As(err, &ue) {
			return asUndecided(err)
		}
		return asUndecided(fmt.Errorf("check wrapper %s: %w", o.Path, err))
	}
	if o.Format == "json" {
		if err := writeJSON(f.IO.Out, res); err != nil {
			return asUndecided(err)
		}
	} else {
		writeWrapperText(f, res)
	}
	if !res.Passed {
		return errFailed
	}
	return nil
}

// writeWrapperText prints one line per probe, and for a failed probe the start of its stderr.
func writeWrapperText(f *Factory, res *wrapper.Result) {
	s := f.IO.OutStyles()
	w := f.IO.Out
	fmt.Fprintf(w, "%s %s, run without Session material", s.ID.Render(res.Clause), s.Location.Render(res.Wrapper))
	if res.RealCLI != "" {
		fmt.Fprintf(w, " against the real CLI %s", s.Location.Render(res.RealCLI))
	}
	fmt.Fprintln(w)
	width := 0
	for _, p := range res.Probes {
		width = max(width, len(p.Command()))
	}
	for _, p := range res.Probes {
		mark := s.Pass.Render("passed")
		if !p.Passed {
			mark = s.Fail.Render("failed")
		}
		pad := strings.Repeat(" ", width-len(p.Command()))
		fmt.Fprintf(w, "  %s  %s%s  %s\n", mark, s.Code.Render(p.Command()), pad, p.Summary)
		if p.LeftRunning {
			fmt.Fprintf(w, "          %s something it started was still running after it exited (killed)\n", s.Dim.Render("note:"))
		}
		if !p.Passed {
			if lines := firstLines(p.Stderr, 3); lines != "" {
				fmt.Fprintf(w, "          %s %s\n", s.Dim.Render("stderr:"), lines)
			}
		}
	}
	if res.Passed {
		fmt.Fprintf(w, "%s all %d probes passed\n", s.Pass.Render("ok"), len(res.Probes))
		return
	}
	fmt.Fprintf(w, "%s %d of %d probes failed. The Claude Agent SDK runs \"claude -v\" without the Session's\n"+
		"environment before it starts the CLI: pass -v and --version through to the real CLI unchanged and\n"+
		"gate everything else (see `astrabox conformance explain %s`).\n",
		s.Fail.Render("FAIL"), res.Failed(), len(res.Probes), res.Clause)
}

// firstLines joins the first n non-empty lines of s with " | ", each cut to 120 characters.
func firstLines(s string, n int) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if len(line) > 120 {
			line = line[:120] + "..."
		}
		out = append(out, line)
		if len(out) == n {
			break
		}
	}
	return strings.Join(out, " | ")
}
