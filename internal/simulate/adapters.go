package simulate

import (
	"sort"
	"strings"
)

// Built-in engine adapters.
const (
	// EngineClaudeCode is the built-in Claude Code adapter: it declares supports_startup_environment() and
	// passes the Session environment through its SDK options before native initialization.
	EngineClaudeCode = "claude-code"
	// EngineCodex is a built-in adapter without startup environment support: it refuses Session environment.
	EngineCodex = "codex"
)

// Adapter is an engine adapter of the platform model.
type Adapter struct {
	Name string
	// StartupEnvironment is supports_startup_environment().
	StartupEnvironment bool
	// Probe is the command the adapter's SDK runs before starting the CLI, without the Session environment.
	Probe []string
}

var adapters = map[string]Adapter{
	EngineClaudeCode: {Name: EngineClaudeCode, StartupEnvironment: true, Probe: []string{"claude", "-v"}},
	EngineCodex:      {Name: EngineCodex, StartupEnvironment: false},
}

// AdapterNames lists the built-in adapters, sorted.
func AdapterNames() []string {
	out := make([]string, 0, len(adapters))
	for n := range adapters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// platformOwnedEnv are environment names the platform sets itself; a provider can never overwrite them.
var platformOwnedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TMPDIR", "LANG", "LC_ALL", "TERM"}

// platformOwnedPrefixes are prefixes of platform-owned environment names.
var platformOwnedPrefixes = []string{"ASTRABOX_", "CLAUDE_CODE_", "ANTHROPIC_"}

// IsPlatformOwnedEnv tells whether an environment name belongs to the platform (SESSION-ENV-RESERVED).
func IsPlatformOwnedEnv(name string) bool {
	for _, n := range platformOwnedEnv {
		if name == n {
			return true
		}
	}
	for _, p := range platformOwnedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
