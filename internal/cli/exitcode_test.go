package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/conformance"
	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// codedError is an error of some other package that carries its own exit code.
type codedError struct{ code int }

func (e codedError) Error() string { return fmt.Sprintf("coded %d", e.code) }
func (e codedError) ExitCode() int { return e.code }

// TestExitCodeFromTypedErrors proves that the exit code comes from the first error in the chain that
// carries one, whatever the message says, and is 2 for an error that carries none.
func TestExitCodeFromTypedErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"failed", errFailed, ExitFailed},
		{"exitError wrapping a usage error", &exitError{code: ExitFailed, err: usagef("x")}, ExitFailed},
		{"usage", usagef("bad flag"), ExitUndecided},
		{"discovery error, wrapped", fmt.Errorf("resolve: %w", &discovery.Error{Message: "no pyproject.toml"}), ExitUndecided},
		{"undecided", &conformance.UndecidedError{Err: errors.New("provider did not load")}, ExitUndecided},
		{"another package's code, wrapped", fmt.Errorf("run: %w", codedError{code: 7}), 7},
		{"a message that reads like a failure", errors.New("unknown command \"x\"; exit 1"), ExitUndecided},
		{"plain", errors.New("boom"), ExitUndecided},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exitCode = %d, want %d", tc.name, got, tc.want)
		}
		var buf bytes.Buffer
		if got := reportError(&buf, term.NewStyles(false), tc.err); got != tc.want {
			t.Errorf("%s: reportError = %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := asUndecided(codedError{code: 7}); exitCode(got) != 7 {
		t.Errorf("asUndecided replaced the code an error carries: %d", exitCode(got))
	}
	if got := asUndecided(errors.New("x")); exitCode(got) != ExitUndecided {
		t.Errorf("asUndecided of a plain error: %d, want 2", exitCode(got))
	}
}
