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

func newReportCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Work with JSON reports",
	}
	var format, output, root string
	var cov CoverageOptions
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
			fm, err := report.ParseFormat(format)
			if err != nil {
				return usagef("%v", err)
			}
			var reps []*report.Report
			for _, p := range args {
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
			opts := report.Options{Root: sourceRoot(f, root, merged.Provider.Project), Manifest: projectManifest(merged.Provider.Project)}
			render := func(w io.Writer, color bool, width int) error {
				o := opts
				o.Styles, o.Width = term.NewStyles(color), width
				r, err := report.New(fm, o)
				if err != nil {
					return err
				}
				return r.Render(w, merged)
			}
			if output != "" {
				err = writeFile(output, "", func(w io.Writer) error { return render(w, false, term.DefaultWidth) })
			} else {
				err = render(f.IO.Out, f.IO.ColorOut, f.IO.Width)
			}
			if err != nil {
				return asUndecided(err)
			}
			if err := writeCoverageFiles(f, merged, &cov, opts.Root); err != nil {
				return asUndecided(err)
			}
			if merged.HasFailures() {
				return errFailed
			}
			return nil
		},
	}
	merge.Flags().StringVarP(&format, "format", "f", "json", "output format: "+strings.Join(report.Formats(), ", "))
	merge.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	merge.Flags().StringVar(&root, "source-root", "", "directory report paths are relative to (default: GITHUB_WORKSPACE or CI_PROJECT_DIR, else the git repository holding the project, else the project)")
	_ = merge.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(report.Formats(), cobra.ShellCompDirectiveNoFileComp))
	lcovXMLFlags(merge, &cov)
	cmd.AddCommand(merge)
	return cmd
}
