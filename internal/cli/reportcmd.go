package cli

import (
	"fmt"
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
	var format, output, sourceRootFlag string
	var cov CoverageOptions
	merge := &cobra.Command{
		Use:   "merge REPORT.json...",
		Short: "Merge the JSON reports of sharded runs into one and render it",
		Long: `Merge JSON reports (astrabox.conformance/v1) of the same provider and seed, for example from CI
matrix shards, into one: each check keeps its worst status and all evidence. Exit status 1 when the
merged report has a failure.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			r, err := report.For(format, f.IO.OutStyles(), f.IO.Width)
			if err != nil {
				return usagef("%v", err)
			}
			w := f.IO.Out
			if output != "" {
				fh, err := os.Create(output)
				if err != nil {
					return asUndecided(fmt.Errorf("write merged report: %w", err))
				}
				defer fh.Close()
				w = fh
				if r, err = report.For(format, term.NewStyles(false), 80); err != nil {
					return usagef("%v", err)
				}
			}
			if err := r.Render(w, merged); err != nil {
				return asUndecided(err)
			}
			if err := writeCoverageFiles(f, merged, &cov, sourceRoot(f, sourceRootFlag, merged.Provider.Project)); err != nil {
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
	coverageFileFlags(merge, &cov, &sourceRootFlag)
	cmd.AddCommand(merge)
	return cmd
}
