// Command gendocs regenerates the documentation that comes from code: docs/checks.md from the check table,
// the man pages in docs/man and the command reference docs/cli.md from the cobra command tree, and the shell
// completions in completions/, and the op table of docs/scenarios.md from the simulator's op registry. `make
// docs` runs it; tests fail when the committed files are stale.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/astrabox-dev/astrabox/internal/cli"
	"github.com/astrabox-dev/astrabox/internal/simulate"
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
	if err := writeOpsTable(filepath.Join(root, "docs", "scenarios.md")); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// writeOpsTable regenerates the op table between the markers of docs/scenarios.md.
func writeOpsTable(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read scenarios doc: %w", err)
	}
	out, err := simulate.ReplaceOpsTable(doc)
	if err != nil {
		return fmt.Errorf("op table: %w", err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("write scenarios doc: %w", err)
	}
	return nil
}
