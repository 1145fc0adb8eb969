// Command gendocs regenerates the documentation that comes from code: docs/checks.md from the check table,
// the man pages in docs/man and the command reference docs/cli.md from the cobra command tree, and the shell
// completions in completions/. `make docs` runs it; tests fail when the committed files are stale.
package main

import (
	"fmt"
	"os"

	"github.com/astrabox-dev/astrabox/internal/cli"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	if err := cli.GenerateDocs(root); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}
