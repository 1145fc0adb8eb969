package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/wrapper"
)

// EnvVar is one environment variable the kit reads, with what it does.
type EnvVar struct {
	Name    string
	Purpose string
}

// Environment lists every environment variable the kit reads from the caller's environment, in the order
// `astrabox help environment` shows them. Variables the kit sets for its own harness processes
// (ASTRABOX_HARNESS_*, ASTRABOX_REPLICA*, ASTRABOX_LIMIT_*, ASTRABOX_PYCACHE, ASTRABOX_DOUBLE_URL) are not
// read from the caller and are not listed. A test keeps the list complete.
var Environment = []EnvVar{
	{"ASTRABOX_PYTHON", "the Python interpreter to load the provider with, unless --python is given"},
	{"VIRTUAL_ENV", "an activated virtual environment: its python is chosen after the project's .venv, and only when the project has none (as uv does)"},
	{"CONDA_PREFIX", "an activated conda environment: its python is chosen after the project's .venv and VIRTUAL_ENV"},
	{"PATH", "where python3 is looked up last, and where the image wrapper check finds the real CLI"},
	{"PYENV_VERSION", "a pyenv version pin: it wins over the project's .python-version, as in pyenv"},
	{"PYENV_ROOT", "where pyenv keeps its Pythons (default ~/.pyenv): searched for a pinned version and for a .venv file's environment name"},
	{"PYENV_DIR", "pyenv's directory to search for .python-version from: when set, a pyenv shim is run to learn its interpreter (docs/configuration.md)"},
	{"PYENV_HOOK_PATH", "pyenv's extra hook directories: a hook there the kit does not know makes it run a pyenv shim to learn its interpreter"},
	{"WORKON_HOME", "virtualenvwrapper's environments: a .venv file's environment name is looked up there"},
	{"ASDF_DATA_DIR", "where asdf keeps its Pythons (default ~/.asdf): searched for a pinned version"},
	{"MISE_DATA_DIR", "where mise keeps its Pythons (default ~/.local/share/mise): searched for a pinned version"},
	{"HOME", "the base of the default pyenv, asdf and mise directories"},
	{wrapper.RealCLIEnv, "the real CLI an image wrapper runs (`image check-wrapper` points it at its stub)"},
	{"GITHUB_WORKSPACE", "GitHub Actions' checkout: report paths are relative to it when it holds the project (--source-root overrides)"},
	{"CI_PROJECT_DIR", "GitLab CI's checkout: report paths are relative to it when it holds the project (--source-root overrides)"},
	{"NO_COLOR", "any non-empty value turns colour off (--color overrides)"},
	{"FORCE_COLOR", "a non-empty value other than 0 turns colour on, even in a pipe (--color overrides)"},
	{"CLICOLOR_FORCE", "like FORCE_COLOR"},
	{"CLICOLOR", "0 turns colour off"},
	{"TERM", "dumb turns colour off"},
	{"SSL_CERT_FILE", "the system's trusted roots: added after the run's certificate authority in the bundle replicas trust (default: the distribution's bundle)"},
	{"TMPDIR", "where scratch directories for the interpreter and the harness are made"},
	{"ASTRABOX_PROFILE_DIR", "a developer knob: harness processes write a cProfile of themselves there (docs/performance.md)"},
	{"ASTRABOX_PROFILE_CLOCK", "a developer knob: cpu makes ASTRABOX_PROFILE_DIR's profiles count CPU time instead of wall time (docs/performance.md)"},
	{"ASTRABOX_TRACE", "a developer knob: 1 prints the run's timeline (resolution, fork servers, inspection, each scenario, judging) to standard error (docs/performance.md)"},
}

// HarnessVariables are the prefixes of the variables the kit sets for its own harness and replica
// processes; they are never read from the caller's environment.
var HarnessVariables = []string{"ASTRABOX_HARNESS_", "ASTRABOX_REPLICA", "ASTRABOX_LIMIT_", "ASTRABOX_PYCACHE", "ASTRABOX_DOUBLE_URL", "ASTRABOX_EGRESS_"}

// interpreterOrder is the order in which the kit chooses the Python interpreter when --python is not given,
// as discovery.FindInterpreter applies it.
const interpreterOrder = "ASTRABOX_PYTHON, the project's .venv, VIRTUAL_ENV (when the project has no .venv), CONDA_PREFIX, then python3 on PATH held to the project's .python-version or .tool-versions pin"

// environmentText is the body of `astrabox help environment`.
func environmentText() string {
	width := 0
	for _, v := range Environment {
		width = max(width, len(v.Name))
	}
	var b strings.Builder
	b.WriteString("Environment variables astrabox reads. Flags override them.\n\n")
	for _, v := range Environment {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, v.Name, v.Purpose)
	}
	b.WriteString("\nThe interpreter, unless --python names one: " + interpreterOrder + ".\n")
	b.WriteString("\nThe kit sets " + strings.Join(HarnessVariables, "*, ") + "* for its own harness processes;\nthey are not read from your environment.\n")
	return b.String()
}

// newEnvironmentTopic is the help topic `astrabox help environment`.
func newEnvironmentTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "environment",
		Short: "Environment variables the kit reads",
		Long:  environmentText(),
	}
}

// colorModes are the values of --color.
var colorModes = []string{"auto", "always", "never"}

// applyColor sets whether Out and Err are coloured from --color: auto keeps what the environment and the
// terminal decided (NO_COLOR, FORCE_COLOR, ...), always and never force it.
func applyColor(f *Factory, mode string) error {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", "auto":
	case "always":
		f.IO.ColorOut, f.IO.ColorErr = true, true
	case "never":
		f.IO.ColorOut, f.IO.ColorErr = false, false
	default:
		return usagef("--color %q: use %s", mode, strings.Join(colorModes, ", "))
	}
	return nil
}
