package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// NewCmdSDK builds `astrabox sdk` and its subcommands.
func NewCmdSDK(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sdk",
		Short: "The embedded astrabox.seams package, for provider unit tests",
	}
	cmd.AddCommand(NewCmdSDKPath(f, nil))
	return cmd
}

// SDKPathOptions are the options of `astrabox sdk path`.
type SDKPathOptions struct {
	// Extract puts the embedded SDK into a directory and returns it (harness.SDKDir unless a test replaces
	// it).
	Extract func() (string, error)
}

// NewCmdSDKPath builds `astrabox sdk path`; runF, when set, replaces the run.
func NewCmdSDKPath(f *Factory, runF func(*SDKPathOptions) error) *cobra.Command {
	o := &SDKPathOptions{Extract: harness.SDKDir}
	return &cobra.Command{
		Use:   "path",
		Short: "Print a directory holding astrabox/seams.py, to put on PYTHONPATH",
		Long: `Print a directory holding the astrabox package (astrabox/seams.py), extracted from the binary
into the user cache. Put it on PYTHONPATH to import astrabox.seams in your own unit tests:

  PYTHONPATH="$(astrabox sdk path)" python -m unittest`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return sdkPath(f, o)
		},
	}
}

// sdkPath extracts the SDK and prints its directory.
func sdkPath(f *Factory, o *SDKPathOptions) error {
	dir, err := o.Extract()
	if err != nil {
		return asUndecided(fmt.Errorf("extract the SDK: %w", err))
	}
	fmt.Fprintln(f.IO.Out, dir)
	return nil
}
