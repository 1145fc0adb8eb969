// Command astrabox is the conformance kit and simulator for astrabox runtime preparation providers.
package main

import (
	"os"

	"github.com/astrabox-dev/astrabox/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:]))
}
