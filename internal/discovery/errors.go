// Package discovery finds what astrabox needs to know about a provider project before running it: the
// project root, the entry-point declarations of the group astrabox.providers.runtime_preparation (read
// statically from pyproject.toml, Poetry tables and setup.cfg, or from installed distribution metadata), the
// project's code roots and raw [tool.astrabox] settings, which single provider to test, and which Python
// interpreter to run it with.
//
// Nothing here imports or executes the provider: project files are parsed statically, and the only Python
// that runs is a short standard-library probe.
package discovery

import (
	"fmt"
	"strings"
)

// ExitCodeUndecided is the process exit code that discovery failures map to: the kit could not decide
// (unreadable project, no provider, conflicting providers).
const ExitCodeUndecided = 2

// Error is a discovery failure tied to a place in a file. File, Line and Column are optional (empty or 0 when
// unknown); Line and Column are 1-based. Hint says what to do about it.
type Error struct {
	File    string
	Line    int
	Column  int
	Message string
	Hint    string
	Err     error

	hideCause bool // Message already says what Err says
}

// Error formats the error as "file:line:col: message", with the hint on the next line.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Err != nil && !e.hideCause && !strings.Contains(e.Message, e.Err.Error()) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString("\n  hint: ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the process exit code for this error (2: the kit could not decide).
func (e *Error) ExitCode() int { return ExitCodeUndecided }

// ConflictError reports more than one provider in the group. The platform refuses to start in that case
// (clause EP-CONFLICT), so the kit exits with code 2 unless one provider is picked explicitly.
type ConflictError struct {
	// Declarations lists every distinct provider found, each with where it came from.
	Declarations []Declaration
}

// Clause is the contract clause this error stands for.
func (e *ConflictError) Clause() string { return "EP-CONFLICT" }

// ExitCode is the process exit code for a conflict (2: the kit could not decide).
func (e *ConflictError) ExitCode() int { return ExitCodeUndecided }

// Error lists the conflicting declarations, one a line.
func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d providers are declared in the entry-point group %s; the platform refuses to start with more than one (EP-CONFLICT):",
		len(e.Declarations), Group)
	for _, d := range e.Declarations {
		fmt.Fprintf(&b, "\n  - %s = %q  (%s)", d.Name, d.Value, d.Where())
	}
	b.WriteString("\n  hint: remove all but one declaration (uninstall the other distributions), or choose one for this run with --provider NAME")
	return b.String()
}

// NoProviderError reports that no provider is declared anywhere. Without a provider the platform prepares
// Agents and Sessions without callbacks (clause EP-NONE), so there is nothing to test.
type NoProviderError struct {
	// ProjectDir is the project that was searched ("" when none).
	ProjectDir string
	// Dynamic is true when the project marks entry-points as dynamic, so only installed metadata can tell.
	Dynamic bool
	// Snippet is the TOML to add to pyproject.toml.
	Snippet string
	// SetupPy is the project's setup.py ("" when none), and SetupPyGroupLine the line of it naming the
	// provider group (0 when none does). Such a project's entry points are known only once it is installed.
	SetupPy          string
	SetupPyGroupLine int
}

// Clause is the contract clause this error stands for.
func (e *NoProviderError) Clause() string { return "EP-NONE" }

// ExitCode is the process exit code (2: the kit could not decide).
func (e *NoProviderError) ExitCode() int { return ExitCodeUndecided }

// Error explains what is missing and shows the declaration to add.
func (e *NoProviderError) Error() string {
	var b strings.Builder
	b.WriteString("no provider is declared in the entry-point group " + Group)
	if e.ProjectDir != "" {
		b.WriteString(" (project " + e.ProjectDir + ")")
	}
	if e.Dynamic {
		b.WriteString("\n  the project lists entry-points in [project] dynamic, so only installed metadata can tell:" +
			" install the project into the interpreter (pip install -e .) and check its build configuration")
	}
	if e.SetupPy != "" {
		if e.SetupPyGroupLine > 0 {
			fmt.Fprintf(&b, "\n  %s:%d names the group, but setup.py is not run to read it: the provider is found in the"+
				" installed project's metadata only", e.SetupPy, e.SetupPyGroupLine)
		} else {
			fmt.Fprintf(&b, "\n  the project is built by %s, which is not run to read it: its entry points are found in the"+
				" installed project's metadata only", e.SetupPy)
		}
		b.WriteString("\n  hint: install the project into the interpreter astrabox uses (see --verbose), from the project" +
			" directory: python -m pip install -e .  (then run again); or declare the provider in setup.py:\n\n" +
			"    entry_points={\"" + Group + "\": [\"enterprise = my_pkg.provider:Provider\"]},\n\n" +
			"  or in pyproject.toml:\n\n")
	} else {
		b.WriteString("\n  hint: declare the provider class in pyproject.toml:\n\n")
	}
	for _, l := range strings.Split(strings.TrimRight(e.Snippet, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
