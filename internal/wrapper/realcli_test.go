package wrapper

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// realClaude is the real Claude CLI (npm's @anthropic-ai/claude-code; its -v works offline), resolved to the
// file npm installed: skipped when it is missing, except under CI, where .ci/run installs it.
func realClaude(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real Claude CLI")
	}
	p, err := exec.LookPath("claude")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the Claude CLI is not installed (CI must have it: npm install -g @anthropic-ai/claude-code)")
		}
		t.Skip("the Claude CLI is not installed: npm install -g @anthropic-ai/claude-code")
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// productionWrappers are wrappers as images ship them: each runs the CLI by a fixed path (CLI is replaced
// by the real CLI's path), never through $ASTRABOX_REAL_CLI or PATH.
var productionWrappers = map[string]string{
	// Gates everything but the version probes on the Session's token.
	"gating": `#!/bin/sh
case "$1" in
  -v|--version) exec CLI "$@" ;;
esac
if [ -z "$SESSION_TOKEN" ]; then
  echo "claude-wrapper: no Session token; refusing to start the agent" >&2
  exit 64
fi
exec CLI "$@"
`,
	// Answers -v itself with a version it made up, and lets everything else through.
	"swallows-v": `#!/bin/sh
if [ "$1" = "-v" ]; then
  echo "1.0.0 (wrapper)"
  exit 0
fi
exec CLI "$@"
`,
	// Prints a banner before every call, the version probes included; gates the rest.
	"banner": `#!/bin/sh
echo "== acme agent image v3 =="
case "$1" in
  -v|--version) exec CLI "$@" ;;
esac
[ -n "$SESSION_TOKEN" ] || exit 64
exec CLI "$@"
`,
}

func checkReal(t *testing.T, name, cli string) *Result {
	t.Helper()
	w := script(t, name, strings.ReplaceAll(productionWrappers[name], "CLI", cli))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only to prevent a hang
	defer cancel()
	res, err := Check(ctx, Options{Path: w, Timeout: 30 * time.Second, RealCLI: cli})
	if err != nil {
		t.Fatalf("Check(%s): %v", name, err)
	}
	if res.RealCLI != cli || !strings.Contains(res.VersionLine, "Claude Code") {
		t.Fatalf("%s: checked against %q, version line %q", name, res.RealCLI, res.VersionLine)
	}
	return res
}

// TestRealCLIGatingWrapperPasses: a production wrapper that hard-codes the CLI's path passes when checked
// unchanged against the real CLI, where the stub check says the real CLI was never reached.
func TestRealCLIGatingWrapperPasses(t *testing.T) {
	cli := realClaude(t)
	res := checkReal(t, "gating", cli)
	if !res.Passed {
		t.Fatalf("a gating wrapper failed against the real CLI: %+v", res.Probes)
	}
	stub, err := Check(context.Background(), Options{Path: script(t, "gating-stub", strings.ReplaceAll(productionWrappers["gating"], "CLI", cli)), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if stub.Passed || !strings.Contains(stub.Probes[0].Summary, "--real-cli") {
		t.Fatalf("without --real-cli the hard-coded wrapper should fail, pointing at --real-cli: %+v", stub.Probes[0])
	}
}

func TestRealCLIWrapperThatSwallowsVersionFails(t *testing.T) {
	res := checkReal(t, "swallows-v", realClaude(t))
	v, version, gated := res.Probes[0], res.Probes[1], res.Probes[2]
	if v.Passed || !strings.Contains(v.Summary, "did not reach stdout") {
		t.Errorf("-v: %s", v.Summary)
	}
	if !version.Passed {
		t.Errorf("--version: %s", version.Summary)
	}
	if gated.Passed || !strings.Contains(gated.Summary, "~/.claude") {
		t.Errorf("-p hello reached the real CLI, but: %s", gated.Summary)
	}
}

func TestRealCLIWrapperWithBannerFails(t *testing.T) {
	res := checkReal(t, "banner", realClaude(t))
	for _, p := range res.Probes[:2] {
		if p.Passed || !strings.Contains(p.Summary, "more than the real CLI's version line") {
			t.Errorf("%s: %s", p.Command(), p.Summary)
		}
	}
	if !res.Probes[2].Passed {
		t.Errorf("gated: %s", res.Probes[2].Summary)
	}
}

// TestRealCLIThatIsNotACLI: --real-cli naming something that does not answer -v is unusable, said as such.
func TestRealCLIThatIsNotACLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	w := script(t, "w", "#!/bin/sh\nexec /bin/false \"$@\"\n")
	for cli, want := range map[string]string{"/bin/false": "does not answer -v by itself", "/nonexistent/claude": "does not exist"} {
		_, err := Check(context.Background(), Options{Path: w, RealCLI: cli})
		var ue *UnusableError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "real CLI "+cli) || !strings.Contains(err.Error(), want) {
			t.Errorf("--real-cli %s: %v, want an unusable real CLI that %s", cli, err, want)
		}
	}
}
