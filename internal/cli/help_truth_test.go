package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/explore"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// inOrder reports whether each of words occurs in text after the one before it.
func inOrder(text string, words ...string) bool {
	at := 0
	for _, w := range words {
		i := strings.Index(text[at:], w)
		if i < 0 {
			return false
		}
		at += i + len(w)
	}
	return true
}

// TestHelpStatesTheInterpreterOrder: --python and `help environment` give the order
// discovery.FindInterpreter applies: ASTRABOX_PYTHON, the project's .venv, VIRTUAL_ENV, CONDA_PREFIX, python3.
func TestHelpStatesTheInterpreterOrder(t *testing.T) {
	order := []string{"ASTRABOX_PYTHON", ".venv", "VIRTUAL_ENV", "CONDA_PREFIX", "python3 on PATH"}
	_, out, _ := execute(t, func(f *Factory) *cobra.Command { return NewRootCmd(f) }, "conformance", "run", "--help")
	usage := out
	if i := strings.Index(usage, "--python"); i < 0 || !inOrder(usage[i:], order...) {
		t.Errorf("conformance run --help does not give the interpreter order %v:\n%s", order, usage)
	}
	env := environmentText()
	if !inOrder(env, "The interpreter, unless --python names one:", "ASTRABOX_PYTHON", ".venv", "VIRTUAL_ENV", "CONDA_PREFIX", "python3 on PATH") {
		t.Errorf("help environment does not give the interpreter order:\n%s", env)
	}
	for _, v := range Environment {
		if v.Name == "VIRTUAL_ENV" && !strings.Contains(v.Purpose, "after the project's .venv") {
			t.Errorf("VIRTUAL_ENV: %q", v.Purpose)
		}
	}
}

// TestCoverageHelpStatesTheRealDefault: --coverage is on by default only with Python 3.12+, and its help
// says so instead of "(default true)".
func TestCoverageHelpStatesTheRealDefault(t *testing.T) {
	_, out, _ := execute(t, func(f *Factory) *cobra.Command { return NewRootCmd(f) }, "conformance", "run", "--help")
	i := strings.Index(out, "--coverage ")
	if i < 0 {
		t.Fatalf("no --coverage in:\n%s", out)
	}
	line := strings.Join(strings.Fields(out[i:min(len(out), i+600)]), " ")
	if strings.Contains(line[:strings.Index(line, "--coverage-")], "(default true)") ||
		!strings.Contains(line, "on with Python 3.12+") || !strings.Contains(line, "off with 3.9 to 3.11") {
		t.Errorf("--coverage help: %s", line)
	}
}

func TestSimulateExploreScenariosFlag(t *testing.T) {
	var got *SimExploreOptions
	build := exploreUnderSimulate(func(o *SimExploreOptions) error { got = o; return nil })
	if err, _, _ := execute(t, build, "explore", "--scenarios", "40"); err != nil || got.Explore.N != 40 {
		t.Fatalf("--scenarios 40: err %v, options %+v", err, got)
	}
	err, out, errOut := execute(t, build, "explore", "--explore", "30")
	if err != nil || got.Explore.N != 30 || !strings.Contains(out+errOut, "use --scenarios N") {
		t.Fatalf("--explore 30 (deprecated alias): err %v, N %d, output %q", err, got.Explore.N, out+errOut)
	}
	_, help, _ := execute(t, build, "explore", "--help")
	if !strings.Contains(help, "--scenarios int") || strings.Contains(help, "--explore int") {
		t.Errorf("help lists --explore or lacks --scenarios:\n%s", help)
	}
}

// TestExploreSummaryFitsEightyColumns: the summary's notices and replay commands wrap at 80 columns, and a
// wrapped replay command is continued with a backslash so that it still pastes as one command.
func TestExploreSummaryFitsEightyColumns(t *testing.T) {
	r := &explore.Result{Seed: 123456789, Scenarios: 500, Callbacks: 123456, Guided: true, Reached: 321, Replayed: 40,
		Mutated: 200, Seeds: 31, Favoured: 12, Unreached: []simulate.Callback{"perform_user_action", "read_user_actions"},
		Failures: []explore.Failure{{Check: "SESSION-NO-SECRETS-IN-ENV", Index: 417, Shrunk: []string{"a", "b"},
			Command: "astrabox simulate run .astrabox/failures/session-no-secrets-in-env-8041331425.yaml --project examples/vault-oauth"}}}
	var b bytes.Buffer
	writeExploreSummary(&b, r)
	text := b.String()
	for _, ln := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if w := ansi.StringWidth(ln); w > 80 {
			t.Errorf("%d columns: %q", w, ln)
		}
	}
	joined := strings.ReplaceAll(text, " \\\n", "")
	if !strings.Contains(strings.Join(strings.Fields(joined), " "), r.Failures[0].Command) {
		t.Errorf("the replay command does not survive the wrapping:\n%s", text)
	}
}
