package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestSuiteProgressLine: with Progress set (a terminal), the default suite rewrites one line per finished
// scenario, counting up to the number of scenarios the report lists, and clears it at the end.
func TestSuiteProgressLine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a provider")
	}
	var progress bytes.Buffer
	// The smallest correct provider: the line counts the default suite's scenarios whatever the provider.
	rep, err := Run(context.Background(), Options{Project: "../../testdata/providers/correct/minimal", Python: "python3", Getenv: os.Getenv, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	n := len(rep.Scenarios)
	out := progress.String()
	if n == 0 || !strings.Contains(out, fmt.Sprintf("\r\x1b[Kran 1/%d scenarios", n)) || !strings.Contains(out, fmt.Sprintf("\r\x1b[Kran %d/%d scenarios", n, n)) {
		t.Fatalf("progress for %d scenarios: %q", n, out)
	}
	if !strings.HasSuffix(out, "\r\x1b[K") || strings.Contains(out, "\n") {
		t.Errorf("the progress line is not one line cleared at the end: %q", out[max(0, len(out)-200):])
	}
}
