//go:build !windows

// Command astrabox is the conformance kit and simulator for astrabox runtime preparation providers.
package main

import (
	"fmt"
	"os"

	"github.com/astrabox-dev/astrabox/internal/cli"
	"github.com/astrabox-dev/astrabox/internal/proclimit"
)

func main() {
	// A process limit too low for the Go runtime's own threads would abort the kit, which no code can catch:
	// refuse it first, with what to do (docs/troubleshooting.md).
	proclimit.RaiseSoft()
	if err := proclimit.Ensure("astrabox", proclimit.Floor); err != nil {
		fmt.Fprintln(os.Stderr, "error: "+err.Error())
		os.Exit(2)
	}
	os.Exit(cli.Execute(os.Args[1:]))
}
