package conformance

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/secrets"
)

// CanaryPrefix starts every canary the kit plants in configuration, so a leak is recognisable by eye too
// (the kit never prints one: it masks them).
const CanaryPrefix = "astx_canary_"

// DefaultConfig returns the default Agent configuration: a realistic resolved configuration whose `secrets`
// fields hold canaries. The trusted, non-secret strings are distinctive so that logging them is detectable.
func DefaultConfig(seed int64) map[string]any {
	tag := fmt.Sprintf("%08x", uint32(seed))
	return map[string]any{
		"agent": map[string]any{
			"display_name": "Sample support agent",
			"model":        "claude-sonnet-4",
			"instructions": "Trusted instructions " + tag + ": answer questions about the sample repository politely.",
		},
		"deployment": map[string]any{
			"base_url": "${ASTRABOX_DOUBLE_URL}",
			"audience": "astrabox-tools",
		},
		"packages": []any{
			map[string]any{"name": "tools", "source": "git+https://example.invalid/tools.git", "ref": "v1"},
		},
		"skills": []any{"summarize"},
		"secrets": map[string]any{
			"model_api_key": "",
			"client_secret": "",
		},
	}
}

// NewCanary returns a fresh canary: CanaryPrefix and 24 hex digits from the system's random source. Canaries
// are not a function of the seed (every user of seed 1 would plant the same two, and a provider could learn
// them); histories and reports stay byte-identical from run to run because every canary is masked to a
// label that names its encoding, never its value. No set holds canaries process-wide: each run masks with
// its own (Env.Secrets), its report and the errors it returns alike.
func NewCanary() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("the system random source failed: %v", err)) // crypto/rand never fails on Linux
	}
	return CanaryPrefix + hex.EncodeToString(b)
}

// plantCanaries fills every field under `secrets` and every configured secret field with a unique canary
// from newCanary, and returns the canaries as secrets with their origins.
func plantCanaries(cfg map[string]any, fields []string, newCanary func() string) ([]secrets.Secret, error) {
	var out []secrets.Secret
	if sec, ok := cfg["secrets"].(map[string]any); ok {
		keys := make([]string, 0, len(sec))
		for k := range sec {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := newCanary()
			sec[k] = v
			out = append(out, secrets.Secret{Value: v, Origin: "configuration field secrets." + k, Kind: secrets.KindConfigField})
		}
	}
	for _, f := range fields {
		parts := strings.Split(f, ".")
		m := cfg
		for i, p := range parts {
			if i == len(parts)-1 {
				v := newCanary()
				m[p] = v
				out = append(out, secrets.Secret{Value: v, Origin: "configuration field " + f, Kind: secrets.KindConfigField})
				break
			}
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
	}
	return out, nil
}

// trustedStrings returns the non-secret string values of a configuration that are long enough to be
// recognised when logged (SYNC-NO-LOG-CONFIG).
func trustedStrings(cfg map[string]any, secretValues map[string]bool) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		case string:
			if len(t) >= 24 && !secretValues[t] && !strings.Contains(t, "${") {
				out = append(out, t)
			}
		}
	}
	walk(cfg)
	sort.Strings(out)
	return out
}

// mergeConfig deep-merges over into base.
func mergeConfig(base, over map[string]any) {
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				mergeConfig(bm, vm)
				continue
			}
		}
		base[k] = v
	}
}
