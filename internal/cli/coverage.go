package cli

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/coverage"
	"github.com/astrabox-dev/astrabox/internal/report"
)

// CoverageOptions are the coverage flags of `astrabox conformance run`.
type CoverageOptions struct {
	// On is --coverage; Set tells whether it was given (otherwise [tool.astrabox] coverage decides).
	On  bool
	Set bool
	// LCOV and XML are the files to write LCOV and Cobertura XML to.
	LCOV, XML string
}

func coverageFlags(cmd *cobra.Command, o *CoverageOptions) {
	cmd.Flags().BoolVar(&o.On, "coverage", false, "measure which lines and branches of the provider's own code run; --coverage=false turns it off (default: on with Python 3.12+, where sys.monitoring makes it cheap, off with 3.9 to 3.11, where a trace function makes the suite about a third slower; [tool.astrabox] coverage overrides the default)")
	lcovXMLFlags(cmd, o)
}

// lcovXMLFlags adds --coverage-lcov and --coverage-xml (also on `report merge`, which writes the shards'
// merged coverage).
func lcovXMLFlags(cmd *cobra.Command, o *CoverageOptions) {
	cmd.Flags().StringVar(&o.LCOV, "coverage-lcov", "", "write the provider's coverage as an LCOV tracefile (genhtml, Codecov) to this file, paths relative to --source-root")
	cmd.Flags().StringVar(&o.XML, "coverage-xml", "", "write the provider's coverage as Cobertura XML (GitLab, Codecov, Jenkins) to this file, paths relative to --source-root")
}

// apply passes the flags to the run; asking for coverage files with coverage off is a usage error.
func (o *CoverageOptions) apply(opts *conformance.Options) error {
	if o.Set {
		on := o.On
		opts.Coverage = &on
		if !on && (o.LCOV != "" || o.XML != "") {
			return usagef("--coverage-lcov and --coverage-xml need coverage; drop --coverage=false")
		}
	} else if o.LCOV != "" || o.XML != "" {
		on := true
		opts.Coverage = &on // the files were asked for: measure even if the settings turn it off
	}
	return nil
}

// writeCoverageFiles writes the LCOV and Cobertura files asked for. A run that measured nothing (the provider
// could not be instantiated) still writes them, empty, and says so.
func writeCoverageFiles(f *Factory, rep *report.Report, o *CoverageOptions, root string) error {
	if o.LCOV == "" && o.XML == "" {
		return nil
	}
	p := rep.Coverage
	if p == nil {
		p = &coverage.Profile{}
		if !f.Quiet {
			fmt.Fprintln(f.IO.Err, "warning: the report holds no coverage (no scenario ran the provider, or coverage was off), so the coverage files list no file")
		}
	}
	write := func(file, what string, render func(*bytes.Buffer) error) error {
		if file == "" {
			return nil
		}
		var buf bytes.Buffer
		if err := render(&buf); err != nil {
			return err
		}
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write the %s coverage to %s: %w", what, file, err)
		}
		return nil
	}
	if err := write(o.LCOV, "LCOV", func(b *bytes.Buffer) error { return coverage.WriteLCOV(b, p, root) }); err != nil {
		return err
	}
	return write(o.XML, "Cobertura", func(b *bytes.Buffer) error {
		return coverage.WriteCobertura(b, p, coverage.CoberturaOptions{Root: root, Version: "astrabox " + f.Version, Timestamp: time.Now().Unix()})
	})
}
