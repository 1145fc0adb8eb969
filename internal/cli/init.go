package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/scaffold"
)

// InitOptions are the options of `astrabox init`.
type InitOptions struct {
	Dir     string
	Name    string
	Package string
	Force   bool
}

func newInitCmd(f *Factory) *cobra.Command {
	return newInitCmdWith(f, nil)
}

func newInitCmdWith(f *Factory, runF func(*InitOptions) error) *cobra.Command {
	o := &InitOptions{}
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Scaffold a provider project that passes the conformance suite as it stands",
		Long: `Write a new runtime preparation provider project into DIR (default: the current directory),
creating it when missing:

  pyproject.toml                   the entry point, in the group
                                   [project.entry-points."astrabox.providers.runtime_preparation"],
                                   and a commented-out [tool.astrabox] table of conformance settings
  src/PACKAGE/provider.py          the provider class; every callback stubbed to the platform's default
                                   behaviour, with a comment naming the clauses it must keep
  tests/test_provider.py           unit tests (unittest) that import astrabox.seams
  .github/workflows/astrabox.yml   CI: the astrabox action (conformance suite, SARIF upload skipped for
                                   pull requests from forks), then the unit tests; the action is pinned
                                   to this astrabox's release or commit
  .gitignore                       ignores .astrabox/ (appended to an existing .gitignore)
  README.md

GitHub reads workflows only at the repository root: when DIR is inside a git repository but not its
root, the workflow is written to the root's .github/workflows/astrabox-NAME.yml instead, with the
project's path in it.

The provider name defaults to DIR's name, lower-cased and reduced to [a-z0-9][a-z0-9._-]*; the package
defaults to the name with "_provider" added. An existing file is never replaced without --force, and
without it nothing is written when any file exists.

Run the generated unit tests with the kit's seams on PYTHONPATH:

  PYTHONPATH="$(astrabox sdk path)" python3 -m unittest

Exit status: 0 when the project was written, 2 on bad usage or when a file exists (without --force) or
cannot be written.`,
		Example: `  astrabox init my-provider
  astrabox init --name acme-tools --package acme_tools .
  astrabox init --force my-provider   # replace the scaffold's files, keep everything else`,
		Args: maxOneArg("directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = "."
			if len(args) == 1 {
				o.Dir = args[0]
			}
			if runF != nil {
				return runF(o)
			}
			return runInit(f, o)
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "provider name, [a-z0-9][a-z0-9._-]{0,62} (default: from the directory name)")
	cmd.Flags().StringVar(&o.Package, "package", "", "Python package under src/ (default: the name with separators as _ and \"_provider\" added)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite files that already exist")
	return cmd
}

func runInit(f *Factory, o *InitOptions) error {
	_, commit, _, _ := buildInfo()
	res, err := scaffold.Write(scaffold.Options{Dir: o.Dir, Name: o.Name, Package: o.Package, Force: o.Force, KitVersion: f.Version, KitCommit: commit})
	var inv *scaffold.InvalidError
	var exists *scaffold.ExistsError
	switch {
	case errors.As(err, &inv):
		return usagef("%v", err)
	case errors.As(err, &exists):
		return asUndecided(err)
	case err != nil:
		return asUndecided(fmt.Errorf("scaffold %s: %w", o.Dir, err))
	}
	if f.Quiet {
		return nil
	}
	s := f.IO.ErrStyles()
	overwritten := map[string]bool{}
	for _, p := range res.Overwritten {
		overwritten[p] = true
	}
	for _, p := range res.Files {
		verb := "created"
		switch {
		case overwritten[p]:
			verb = "replaced"
		case p == ".gitignore" && res.GitignoreAppended:
			verb = "appended .astrabox/ to"
		}
		fmt.Fprintf(f.IO.Err, "%s %s\n", s.Dim.Render(verb), p)
	}
	if res.RepoRoot != "" && res.RepoRoot != res.Dir && res.Workflow != "" {
		fmt.Fprintf(f.IO.Err, "\nThe workflow is in %s: GitHub reads workflows only at the repository root (%s).\n", res.Workflow, res.RepoRoot)
	}
	if res.FloatingPin {
		fmt.Fprintf(f.IO.Err, "\nwarning: this astrabox has no release version and no commit (built outside a git checkout), so the "+
			"workflow's action follows @main, which moves: pin a release tag or a commit in %s.\n", res.Workflow)
	}
	fmt.Fprintf(f.IO.Err, "\nProvider %q (%s.provider:%s) is ready in %s. Next:\n\n", res.Name, res.Package, res.Class, res.Dir)
	fmt.Fprintf(f.IO.Err, "  cd %s\n  PYTHONPATH=\"$(astrabox sdk path)\" python3 -m unittest\n  astrabox conformance run\n", shellQuote(res.Dir))
	return nil
}

// shellQuote quotes a path for a POSIX shell when it needs it.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
