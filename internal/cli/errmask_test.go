package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// TestExitTwoErrorIsMaskedAndSanitised feeds the error printer what a provider can put in a load error, as
// the run returns it (masked with the run's own secrets, secrets.Set.MaskError): a canary it stashed in an
// earlier callback (raw and hex-encoded), a workload identity token the run's set does not hold, terminal
// escape sequences, a carriage return and a workflow command on a line of its own.
func TestExitTwoErrorIsMaskedAndSanitised(t *testing.T) {
	canary := conformance.NewCanary()
	run := &secrets.Set{}
	run.Add(canary, "configuration field secrets.model_api_key")
	err := run.MaskError(fmt.Errorf("load the provider: %w", fmt.Errorf("RuntimeError: bad key %s\n::error file=x.py::owned\n\x1b]0;pwned\x07\x1b[2J\rwid astx_wid_0011aabb and %s", canary, strings.ToUpper(fmt.Sprintf("%x", canary)))))
	var out bytes.Buffer
	code := reportError(&out, term.NewStyles(false), err)
	got := out.String()
	if code != ExitUndecided {
		t.Errorf("exit %d, want %d", code, ExitUndecided)
	}
	for _, bad := range []string{canary, strings.ToUpper(fmt.Sprintf("%x", canary)), "astx_wid_0011aabb", "\x1b", "\x07", "\r", "\n::error"} {
		if strings.Contains(got, bad) {
			t.Errorf("printed error holds %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{secrets.Marker("raw"), secrets.Marker("hex"), `\x1b]0;pwned`, "\n\\x3a:error file=x.py"} {
		if !strings.Contains(got, want) {
			t.Errorf("printed error lacks %q:\n%s", want, got)
		}
	}
}
