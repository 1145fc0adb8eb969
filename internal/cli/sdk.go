package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

func newSDKCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sdk",
		Short: "The embedded astrabox.seams package, for provider unit tests",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "path",
		Short: "Print a directory holding astrabox/seams.py, to put on PYTHONPATH",
		Long: `Print a directory holding the astrabox package (astrabox/seams.py), extracted from the binary
into the user cache. Put it on PYTHONPATH to import astrabox.seams in your own unit tests:

  PYTHONPATH="$(astrabox sdk path)" python -m unittest`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := harness.SDKDir()
			if err != nil {
				return asUndecided(fmt.Errorf("extract the SDK: %w", err))
			}
			fmt.Fprintln(f.IO.Out, dir)
			return nil
		},
	})
	return cmd
}
