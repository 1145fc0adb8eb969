package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// MergeOptions are the options of `astrabox report merge`.
type MergeOptions struct {
	// Files are the JSON reports to merge.
	Files []string
	// Format is the output format as given; it is validated against report.Reports before the run.
	Format     string
	Output     string
	SourceRoot string
	Coverage   CoverageOptions
	format     report.Format
}

func newReportCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Work with JSON reports",
	}
	cmd.AddCommand(NewCmdReportMerge(f, nil))
	return cmd
}

// NewCmdReportMerge builds `astrabox report merge`; runF, when set, replaces the run.
func NewCmdReportMerge(f *Factory, runF func(*MergeOptions) error) *cobra.Command {
	o := &MergeOptions{}
	merge := &cobra.Command{
		Use:   "merge REPORT.json...",
		Short: "Merge the JSON reports of sharded runs into one and render it",
		Long: `Merge JSON reports (astrabox.conformance/v1) of the same provider and seed, for example from CI
matrix shards, into one: each check keeps its worst status and all evidence. Paths in JUnit, SARIF,
GitHub, GitLab and concise output are relative to --source-root (default: GITHUB_WORKSPACE or
CI_PROJECT_DIR when it holds the project, else the git repository holding the project, else the
project). Exit status 1
when the merged report has a failure.`,
		Example: `  astrabox report merge shard-*.json --format sarif --output astrabox.sarif
  astrabox report merge shard-*.json --format junit --source-root . --output junit.xml`,
		Args: minArgs("REPORT.json"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := parseFormat(&o.Format, report.Reports); err != nil {
				return err
			}
			o.Files, o.format = args, report.Format(o.Format)
			if runF != nil {
				return runF(o)
			}
			return mergeReports(f, o)
		},
	}
	merge.Flags().StringVarP(&o.Format, "format", "f", "json", "output format: "+strings.Join(report.Reports.Names(), ", "))
	merge.Flags().StringVarP(&o.Output, "output", "o", "", "write to this file instead of stdout")
	merge.Flags().StringVar(&o.SourceRoot, "source-root", "", "directory report paths are relative to (default: GITHUB_WORKSPACE or CI_PROJECT_DIR, else the git repository holding the project, else the project)")
	_ = merge.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(report.Reports.Names(), cobra.ShellCompDirectiveNoFileComp))
	lcovXMLFlags(merge, &o.Coverage)
	return merge
}

// mergeReports reads, merges and renders the reports; exit 1 when the merged report has a failure.
func mergeReports(f *Factory, o *MergeOptions) error {
	var reps []*report.Report
	for _, p := range o.Files {
		fh, err := os.Open(p)
		if err != nil {
			return asUndecided(fmt.Errorf("read report: %w", err))
		}
		r, err := report.ReadJSON(fh)
		fh.Close()
		if err != nil {
			return asUndecided(fmt.Errorf("%s: %w", p, err))
		}
		reps = append(reps, r)
	}
	merged, err := report.Merge(reps...)
	if err != nil {
		return asUndecided(err)
	}
	merged = mapInstalledSources(merged)
	opts := report.Options{Root: sourceRoot(f, o.SourceRoot, merged.Provider.Project), Manifest: projectManifest(merged.Provider.Project)}
	render := func(w io.Writer, color bool, width int) error {
		ro := opts
		ro.Styles, ro.Width = term.NewStyles(color), width
		r, err := report.New(o.format, ro)
		if err != nil {
			return err
		}
		return r.Render(w, merged)
	}
	if o.Output != "" {
		err = writeFile(o.Output, "", func(w io.Writer) error { return render(w, false, term.DefaultWidth) })
	} else {
		err = render(f.IO.Out, f.IO.ColorOut, f.IO.Width)
	}
	if err != nil {
		return asUndecided(err)
	}
	if err := writeCoverageFiles(f, merged, &o.Coverage, opts.Root); err != nil {
		return asUndecided(err)
	}
	if merged.HasFailures() {
		return errFailed
	}
	return nil
}
