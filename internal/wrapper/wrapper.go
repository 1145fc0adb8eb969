// Package wrapper checks an image's CLI wrapper script against clause SESSION-CLI-PROBE: a wrapper that
// gates the engine's CLI on Session material must pass `-v` and `--version` through unchanged, because the
// Claude Agent SDK probes the CLI with them before it starts it, without the Session's environment.
//
// The check runs the wrapper the way the SDK probes it: with a minimal environment (PATH, HOME pointing at
// an empty temporary directory, LANG) that carries no Session material, and with a stub of the real CLI
// that records the arguments it receives and prints a known version line. A wrapper finds the real CLI
// through the ASTRABOX_REAL_CLI environment variable when it is set, otherwise as `claude` on PATH; the check
// sets the variable to the stub and also puts the stub first on PATH, so either convention reaches it.
package wrapper

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Clause is the clause the check decides.
const Clause = "SESSION-CLI-PROBE"

// RealCLIEnv names the environment variable through which a wrapper finds the real CLI. When it is unset a
// wrapper runs `claude` from PATH.
const RealCLIEnv = "ASTRABOX_REAL_CLI"

// RealCLIName is the real CLI's command name on PATH.
const RealCLIName = "claude"

// DefaultTimeout bounds each run of the wrapper.
const DefaultTimeout = 5 * time.Second

// SystemPath is the PATH after the stub's directory: the usual directories of an image.
const SystemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// outputLimit is how much of each of stdout and stderr a run keeps; the rest is read and dropped.
const outputLimit = 64 << 10

// waitDelay is how long a run waits for its output after the wrapper exits, for background processes that
// keep stdout or stderr open.
const waitDelay = 500 * time.Millisecond

// Expectation is what a probe requires of the wrapper.
type Expectation string

const (
	// PassThrough: the real CLI is reached with exactly the probe's arguments, the wrapper exits 0 and
	// the real CLI's output reaches stdout unchanged.
	PassThrough Expectation = "pass-through"
	// Gated: without Session material the real CLI is not reached.
	Gated Expectation = "gated"
)

// Probe is one run of the wrapper and its verdict.
type Probe struct {
	// Args are the arguments the wrapper was run with.
	Args []string `json:"args"`
	// Expect is what the probe requires.
	Expect Expectation `json:"expect"`
	// Passed is the verdict; Summary says why in one line, Problems lists each reason it failed.
	Passed   bool     `json:"passed"`
	Summary  string   `json:"summary"`
	Problems []string `json:"problems,omitempty"`
	// ExitCode is the wrapper's exit status, -1 when it was killed by a signal.
	ExitCode int `json:"exit_code"`
	// TimedOut is set when the run was killed at the timeout.
	TimedOut bool `json:"timed_out,omitempty"`
	// LeftRunning is set when something the wrapper started was still running after it exited (it was
	// killed, wherever it had gone: the wrapper runs under a warden that no descendant can leave).
	LeftRunning bool `json:"left_running,omitempty"`
	// RealCLICalls holds the arguments of each call the stub of the real CLI received, in order; nil (JSON
	// null) when the wrapper was checked against the real CLI (--real-cli), whose calls are not recorded.
	RealCLICalls [][]string `json:"real_cli_calls"`
	// Stdout and Stderr are the wrapper's output (at most 64 KiB each); *Truncated say whether more was
	// written.
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
}

// Command is the probe's command line for display, e.g. "wrapper -v".
func (p Probe) Command() string {
	return strings.Join(append([]string{"wrapper"}, quoteArgs(p.Args)...), " ")
}

// Result is the outcome of checking one wrapper.
type Result struct {
	// Wrapper is the absolute path of the script checked.
	Wrapper string `json:"wrapper"`
	// Clause is always SESSION-CLI-PROBE.
	Clause string `json:"clause"`
	// Passed is true when every probe passed.
	Passed bool `json:"passed"`
	// VersionLine is what the stub of the real CLI prints.
	VersionLine string `json:"version_line"`
	// Timeout is the per-run bound, in seconds.
	Timeout float64 `json:"timeout_seconds"`
	// RealCLI is the real CLI the wrapper was checked against (--real-cli), "" when a stub stood in for it.
	RealCLI string `json:"real_cli,omitempty"`
	// Probes are the runs, in order.
	Probes []Probe `json:"probes"`
}

// Failed counts the probes that failed.
func (r *Result) Failed() int {
	n := 0
	for _, p := range r.Probes {
		if !p.Passed {
			n++
		}
	}
	return n
}

// UnusableError says the wrapper cannot be checked at all: missing, a directory, not executable, or not
// something the system can run.
type UnusableError struct {
	// What is "wrapper" (when empty) or "real CLI".
	What   string
	Path   string
	Reason string
	Err    error
}

func (e *UnusableError) Error() string {
	what := e.What
	if what == "" {
		what = "wrapper"
	}
	return fmt.Sprintf("%s %s %s", what, e.Path, e.Reason)
}

func (e *UnusableError) Unwrap() error { return e.Err }

// Options say which wrapper to check and how.
type Options struct {
	// Path is the wrapper script.
	Path string
	// Timeout bounds each run; 0 means DefaultTimeout.
	Timeout time.Duration
	// RealCLI, when set, is the path at which the wrapper runs the real CLI (a production wrapper that
	// hard-codes it). The wrapper is then checked unchanged against that real CLI instead of a stub: a
	// version probe passes when the wrapper's stdout is exactly what the real CLI prints for the same
	// argument, and the real CLI counts as reached by an ordinary call when it wrote its state into the
	// run's empty HOME (the Claude CLI writes ~/.claude.json on every start but -v and --version).
	RealCLI string
}

// probes are the runs of the check: the SDK's two version probes, then an ordinary call that must be gated.
var probes = []struct {
	args   []string
	expect Expectation
}{
	{[]string{"-v"}, PassThrough},
	{[]string{"--version"}, PassThrough},
	{[]string{"-p", "hello"}, Gated},
}

// Check runs every probe against the wrapper at o.Path. It returns an *UnusableError when the wrapper
// cannot be run at all; a wrapper that runs but misbehaves gives a Result whose probes say why.
func Check(ctx context.Context, o Options) (*Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	path, err := usable(o.Path)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 4)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("make a version line: %w", err)
	}
	res := &Result{
		Wrapper:     path,
		Clause:      Clause,
		VersionLine: "2.1.0-astrabox." + hex.EncodeToString(nonce) + " (Claude Code)",
		Timeout:     o.Timeout.Seconds(),
		Passed:      true,
	}
	var real *realCLI
	if o.RealCLI != "" {
		if real, err = probeRealCLI(ctx, o.RealCLI, o.Timeout); err != nil {
			return nil, err
		}
		res.RealCLI, res.VersionLine = real.path, strings.TrimRight(real.outputs["-v"], "\n")
	}
	for _, pr := range probes {
		p, err := runProbe(ctx, path, pr.args, pr.expect, res.VersionLine, o.Timeout, real)
		if err != nil {
			return nil, err
		}
		res.Probes = append(res.Probes, *p)
		res.Passed = res.Passed && p.Passed
	}
	return res, nil
}

// realCLI is the real CLI a wrapper is checked against, with what it prints itself for each version probe.
type realCLI struct {
	path    string
	outputs map[string]string // stdout of `path ARG` for each version probe's argument
}

// probeRealCLI runs the real CLI's version probes directly, in the same minimal environment as the
// wrapper, to learn what the wrapper must pass through.
func probeRealCLI(ctx context.Context, path string, timeout time.Duration) (*realCLI, error) {
	abs, err := usable(path)
	if err != nil {
		var ue *UnusableError
		if errors.As(err, &ue) {
			ue.What = "real CLI"
		}
		return nil, err
	}
	real := &realCLI{path: abs, outputs: map[string]string{}}
	for _, pr := range probes {
		if pr.expect != PassThrough {
			continue
		}
		tmp, err := os.MkdirTemp("", "astrabox-real-cli-")
		if err != nil {
			return nil, fmt.Errorf("create a temporary directory: %w", err)
		}
		env := []string{"PATH=" + SystemPath, "HOME=" + tmp, "LANG=C.UTF-8"}
		stdout, stderr := &boundedBuffer{limit: outputLimit}, &boundedBuffer{limit: outputLimit}
		r, err := run(ctx, abs, pr.args, tmp, env, stdout, stderr, timeout)
		os.RemoveAll(tmp)
		if err != nil {
			return nil, err
		}
		if r.exitCode != 0 || strings.TrimSpace(stdout.String()) == "" {
			return nil, &UnusableError{What: "real CLI", Path: path, Reason: fmt.Sprintf("does not answer %s by itself (exit %d, stdout %s, stderr %s); "+
				"give --real-cli the CLI the wrapper runs", strings.Join(pr.args, " "), r.exitCode, excerpt(stdout.String()), excerpt(stderr.String()))}
		}
		real.outputs[strings.Join(pr.args, " ")] = stdout.String()
	}
	return real, nil
}

// usable resolves path and checks that it is an executable regular file.
func usable(path string) (string, error) {
	if path == "" {
		return "", &UnusableError{Path: `""`, Reason: "is empty; give the path of the image's CLI wrapper script"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &UnusableError{Path: path, Reason: "cannot be resolved", Err: err}
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", &UnusableError{Path: path, Reason: "does not exist", Err: err}
	case err != nil:
		return "", &UnusableError{Path: path, Reason: "cannot be read: " + err.Error(), Err: err}
	case st.IsDir():
		return "", &UnusableError{Path: path, Reason: "is a directory; give the wrapper script itself"}
	case !st.Mode().IsRegular():
		return "", &UnusableError{Path: path, Reason: "is not a regular file"}
	case st.Mode().Perm()&0o111 == 0:
		return "", &UnusableError{Path: path, Reason: "is not executable; the image runs it as a command (chmod +x it)"}
	}
	return abs, nil
}

// runProbe runs the wrapper once in a fresh temporary directory holding the stub, an empty home and a
// working directory, and decides the probe.
// With real set, no stub is written: the wrapper runs the real CLI at the path it names itself.
func runProbe(ctx context.Context, wrapper string, args []string, expect Expectation, version string, timeout time.Duration, real *realCLI) (*Probe, error) {
	tmp, err := os.MkdirTemp("", "astrabox-wrapper-")
	if err != nil {
		return nil, fmt.Errorf("create a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	bin, home, work, calls := filepath.Join(tmp, "bin"), filepath.Join(tmp, "home"), filepath.Join(tmp, "work"), filepath.Join(tmp, "calls")
	for _, d := range []string{bin, home, work, calls} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	stub := filepath.Join(bin, RealCLIName)
	if real != nil {
		stub = real.path
	} else if err := os.WriteFile(stub, []byte(stubScript(calls, version)), 0o755); err != nil {
		return nil, fmt.Errorf("write the stub CLI: %w", err)
	}

	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + SystemPath,
		"HOME=" + home,
		"LANG=C.UTF-8",
		RealCLIEnv + "=" + stub,
	}
	stdout, stderr := &boundedBuffer{limit: outputLimit}, &boundedBuffer{limit: outputLimit}
	r, err := run(ctx, wrapper, args, work, env, stdout, stderr, timeout)
	if err != nil {
		return nil, err
	}
	p := &Probe{
		Args:            args,
		Expect:          expect,
		ExitCode:        r.exitCode,
		TimedOut:        r.timedOut,
		LeftRunning:     r.leftRunning,
		Stdout:          stdout.String(),
		Stderr:          stderr.String(),
		StdoutTruncated: stdout.truncated,
		StderrTruncated: stderr.truncated,
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("check interrupted: %w", err)
	}
	if real != nil {
		decideReal(p, real, home, timeout)
		return p, nil
	}
	p.RealCLICalls, err = readCalls(calls)
	if err != nil {
		return nil, err
	}
	decide(p, version, timeout)
	return p, nil
}

// decideReal sets the verdict of a run against the real CLI: a version probe must print exactly what the
// real CLI prints and exit 0; an ordinary call must leave the empty HOME as it was (the real CLI writes
// its state there when it starts for anything but a version probe).
func decideReal(p *Probe, real *realCLI, home string, timeout time.Duration) {
	var problems []string
	if p.TimedOut {
		problems = append(problems, fmt.Sprintf("did not finish within %s (killed with everything it started)", timeout))
	}
	want := strings.Join(quoteArgs(p.Args), " ")
	switch p.Expect {
	case PassThrough:
		own := real.outputs[strings.Join(p.Args, " ")]
		if p.ExitCode != 0 && !p.TimedOut {
			problems = append(problems, fmt.Sprintf("exit status %d, want 0 (the SDK takes a failed probe for a missing CLI)", p.ExitCode))
		}
		switch {
		case !strings.Contains(p.Stdout, strings.TrimSpace(own)):
			problems = append(problems, fmt.Sprintf("the real CLI's own output for [%s] (%s) did not reach stdout: %s", want, excerpt(own), excerpt(p.Stdout)))
		case p.Stdout != own:
			problems = append(problems, fmt.Sprintf("stdout carries more than the real CLI's version line (the SDK reads the version from it): %s", excerpt(p.Stdout)))
		}
		if len(problems) == 0 {
			p.Summary = fmt.Sprintf("passed through unchanged: exit 0, stdout is the real CLI's own answer to [%s]", want)
		}
	case Gated:
		if wrote := claudeState(home); wrote != "" {
			problems = append(problems, fmt.Sprintf("not gated: the real CLI ran for [%s] without Session material (it wrote %s in the empty HOME)", want, wrote))
		}
		if len(problems) == 0 {
			p.Summary = fmt.Sprintf("gated: exit %d without Session material; the real CLI left no state in the empty HOME", p.ExitCode)
		}
	}
	p.Problems = problems
	p.Passed = len(problems) == 0
	if !p.Passed {
		p.Summary = strings.Join(problems, "; ")
	}
}

// claudeState names the first state the Claude CLI writes into HOME when it starts (.claude.json, .claude),
// "" when there is none.
func claudeState(home string) string {
	for _, name := range []string{".claude.json", ".claude"} {
		if _, err := os.Lstat(filepath.Join(home, name)); err == nil {
			return "~/" + name
		}
	}
	return ""
}

// decide sets the verdict of a finished run.
func decide(p *Probe, version string, timeout time.Duration) {
	var problems []string
	if p.TimedOut {
		problems = append(problems, fmt.Sprintf("did not finish within %s (killed with everything it started)", timeout))
	}
	want := quoteArgs(p.Args)
	switch p.Expect {
	case PassThrough:
		if len(p.RealCLICalls) == 0 {
			problems = append(problems, fmt.Sprintf("the real CLI was never reached (looked for $%s, then %s on PATH; a wrapper that runs the CLI by a fixed path is checked with --real-cli PATH)", RealCLIEnv, RealCLIName))
		}
		for _, call := range p.RealCLICalls {
			if !slices.Equal(call, p.Args) {
				problems = append(problems, fmt.Sprintf("the real CLI saw [%s] instead of [%s]", strings.Join(quoteArgs(call), " "), strings.Join(want, " ")))
			}
		}
		if p.ExitCode != 0 && !p.TimedOut {
			problems = append(problems, fmt.Sprintf("exit status %d, want 0 (the SDK takes a failed probe for a missing CLI)", p.ExitCode))
		}
		switch {
		case !strings.Contains(p.Stdout, version):
			problems = append(problems, "the real CLI's version line did not reach stdout")
		case p.Stdout != version+"\n":
			problems = append(problems, fmt.Sprintf("stdout carries more than the real CLI's version line (the SDK reads the version from it): %s", excerpt(p.Stdout)))
		}
		if len(problems) == 0 {
			p.Summary = fmt.Sprintf("passed through unchanged: the real CLI saw [%s], exit 0, its version line reached stdout", strings.Join(want, " "))
		}
	case Gated:
		if len(p.RealCLICalls) > 0 {
			problems = append(problems, fmt.Sprintf("not gated: the real CLI ran for [%s] without Session material", strings.Join(want, " ")))
		}
		if len(problems) == 0 {
			p.Summary = fmt.Sprintf("gated: exit %d without Session material; the real CLI was not reached", p.ExitCode)
			if p.ExitCode == 0 {
				p.Summary += " (a non-zero exit would tell the caller why)"
			}
		}
	}
	p.Problems = problems
	p.Passed = len(problems) == 0
	if !p.Passed {
		p.Summary = strings.Join(problems, "; ")
	}
}

// stubScript is the stand-in for the real CLI. Each call claims a number n by creating the file n with
// noclobber in a subshell (atomic, and no external command, so it works whatever PATH the wrapper hands on), writes each
// argument to n.arg.i (so any byte but NUL survives) and the count to n.argc, then prints the version line.
func stubScript(calls, version string) string {
	return `#!/bin/sh
# astrabox image check-wrapper: a stand-in for the real CLI that records its arguments.
d=` + shellQuote(calls) + `
set -C
n=1
while ! (: > "$d/$n") 2>/dev/null; do
  n=$((n + 1))
  if [ "$n" -gt 1000 ]; then exit 70; fi
done
set +C
i=0
for a in "$@"; do
  i=$((i + 1))
  printf '%s' "$a" > "$d/$n.arg.$i"
done
printf '%s' "$#" > "$d/$n.argc"
printf '%s\n' ` + shellQuote(version) + `
exit 0
`
}

// readCalls reads what the stub recorded, in call order.
func readCalls(dir string) ([][]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read the stub's record: %w", err)
	}
	var nums []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.Type().IsRegular() {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	calls := [][]string{}
	for _, n := range nums {
		prefix := filepath.Join(dir, strconv.Itoa(n))
		argc := -1
		if b, err := os.ReadFile(prefix + ".argc"); err == nil {
			argc, _ = strconv.Atoi(string(b))
		}
		args := []string{}
		for i := 1; argc < 0 || i <= argc; i++ {
			b, err := os.ReadFile(prefix + ".arg." + strconv.Itoa(i))
			if err != nil {
				break // a call killed while recording keeps the arguments it wrote
			}
			args = append(args, string(b))
		}
		calls = append(calls, args)
	}
	return calls, nil
}

// boundedBuffer keeps the first limit bytes written to it and drops the rest, never failing a write.
type boundedBuffer struct {
	buf       bytes.Buffer
	limit     int
	truncated bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.limit - b.buf.Len()
	if room >= len(p) {
		b.buf.Write(p)
	} else {
		if room > 0 {
			b.buf.Write(p[:room])
		}
		b.truncated = true
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }

// quoteArgs shows arguments so that spaces and empty strings stay visible.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\") {
			out[i] = strconv.Quote(a)
		} else {
			out[i] = a
		}
	}
	return out
}

// excerpt is the start of s on one line, for messages.
func excerpt(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
