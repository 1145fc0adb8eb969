package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// FailOn is the policy that decides which results fail a run (exit 1).
type FailOn string

// The --fail-on policies.
const (
	// FailOnFailed fails the run on a failed or flaky check (the default).
	FailOnFailed FailOn = "failed"
	// FailOnWarning also fails it on a warning.
	FailOnWarning FailOn = "warning"
)

// Policy is how a run's results become its exit status.
type Policy struct {
	// FailOn says which results fail the run.
	FailOn FailOn
	// ExitZero makes a run whose checks failed exit 0 anyway; a run the kit could not decide still exits 2.
	ExitZero bool
}

// parseFailOn reads a --fail-on value.
func parseFailOn(s string) (FailOn, error) {
	switch FailOn(strings.ToLower(strings.TrimSpace(s))) {
	case FailOnFailed, "":
		return FailOnFailed, nil
	case FailOnWarning:
		return FailOnWarning, nil
	}
	return "", usagef("--fail-on %q: use %s or %s", s, FailOnFailed, FailOnWarning)
}

// errInterrupted ends a run stopped by Ctrl-C or SIGTERM.
var errInterrupted = errors.New("interrupted: the run stopped before it could decide; no report was written")

// verdictError is the exit of a run with a report: 1 when a check failed (or, with --fail-on warning, warned),
// 2 when some check could not be decided (not_exercised) and none failed, else 0; --exit-zero turns 1 into 0.
func verdictError(rep *report.Report, p Policy) error {
	failed := rep.HasFailures()
	if p.FailOn == FailOnWarning {
		for _, res := range rep.Results {
			failed = failed || res.Status == report.StatusWarning
		}
	}
	switch {
	case failed && p.ExitZero:
		return nil
	case failed:
		return errFailed
	case rep.Undecided():
		var ids []string
		for _, res := range rep.Results {
			if res.Status == report.StatusNotExercised {
				ids = append(ids, res.Check)
			}
		}
		return &exitError{code: ExitUndecided, err: fmt.Errorf("the kit could not decide: %d check(s) not exercised (%s); add scenarios that reach them, or skip them with a reason in [tool.astrabox] skip",
			len(ids), strings.Join(ids, ", "))}
	}
	return nil
}

// projectDir is the absolute project directory a run was asked for (the working directory when empty).
func projectDir(project string) string {
	if project == "" {
		project = "."
	}
	if abs, err := filepath.Abs(project); err == nil {
		return abs
	}
	return project
}

// projectManifest is the project file results without a location point at when the report does not name
// the declaring file: the first of pyproject.toml, setup.cfg and setup.py the project holds.
func projectManifest(project string) string {
	for _, name := range []string{"pyproject.toml", "setup.cfg", "setup.py"} {
		if _, err := os.Stat(filepath.Join(project, name)); err == nil {
			return name
		}
	}
	return ""
}

// projectArg accepts at most one positional argument, the project directory, with an error in the kit's own
// words.
func projectArg(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usagef("%s takes at most one project directory, got %d arguments (%s)", cmd.CommandPath(), len(args), strings.Join(args, " "))
	}
	return nil
}

// takeProjectArg sets the project from the positional argument; giving it and a different --project is an
// error.
func takeProjectArg(cmd *cobra.Command, args []string, project *string) error {
	if len(args) == 0 {
		return nil
	}
	if *project != "" && filepath.Clean(*project) != filepath.Clean(args[0]) {
		return usagef("the project is given twice: %q and --project %q; give one", args[0], *project)
	}
	*project = args[0]
	return nil
}

// parseFormat validates a command's --format against the formats it accepts (report.Reports or
// report.TextOrJSON: the one format registry), in any case, and normalises it to the format's name; an unknown
// name is a usage error that lists the accepted ones.
func parseFormat(format *string, accepted report.FormatSet) error {
	f, err := accepted.Parse(*format)
	if err != nil {
		return &usageError{err}
	}
	*format = string(f)
	return nil
}
