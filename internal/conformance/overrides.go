package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// settingsSource returns the raw settings a run uses, the file they are reported against and the directory
// their relative paths are relative to: the project's ([tool.astrabox] or astrabox.toml), or configFile
// when given (--config, as ruff's: a pyproject.toml gives its [tool.astrabox] table, any other file is read
// like astrabox.toml), then every KEY=VALUE of set applied over them (--set: VALUE is a TOML value, or taken
// as a string when it is not one).
func settingsSource(raw map[string]any, file, dir, configFile string, set []string) (map[string]any, string, string, error) {
	if configFile != "" {
		m, err := readSettingsFile(configFile)
		if err != nil {
			return nil, "", "", err
		}
		abs, _ := filepath.Abs(configFile)
		raw, file, dir = m, configFile, filepath.Dir(abs)
	}
	if len(set) == 0 {
		return raw, file, dir, nil
	}
	out := simulate.CopyMap(raw)
	if out == nil {
		out = map[string]any{}
	}
	for _, kv := range set {
		k, v, err := parseSetting(kv)
		if err != nil {
			return nil, "", "", err
		}
		if old, ok := out[k].(map[string]any); ok {
			if nv, ok := v.(map[string]any); ok {
				mergeConfig(old, nv)
				continue
			}
		}
		out[k] = v
	}
	if file == "" {
		file = "--set"
	} else {
		file += " and --set"
	}
	return out, file, dir, nil
}

// readSettingsFile reads a --config file.
func readSettingsFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	var m map[string]any
	if _, err := toml.Decode(string(data), &m); err != nil {
		// The decoder's messages quote values; discovery.TOMLError names a secret key's value never.
		msg, line, col := discovery.TOMLError(string(data), err)
		if line > 0 {
			return nil, fmt.Errorf("--config %s:%d:%d: %s", path, line, col, msg)
		}
		return nil, fmt.Errorf("--config %s: %s", path, msg)
	}
	if filepath.Base(path) != "pyproject.toml" {
		return m, nil
	}
	tool, _ := m["tool"].(map[string]any)
	t, ok := tool["astrabox"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("--config %s: it has no [tool.astrabox] table", path)
	}
	return t, nil
}

// parseSetting reads one --set KEY=VALUE.
func parseSetting(kv string) (string, any, error) {
	k, v, ok := strings.Cut(kv, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" || strings.ContainsAny(k, " \t\"'[]") {
		if ok && discovery.IsSecretKey(k) {
			kv = k + "=(value not shown: a secret)"
		}
		return "", nil, fmt.Errorf("--set %q: use KEY=VALUE with a [tool.astrabox] key and a TOML value, for example --set seed=7 or --set 'deadlines={turn=5}'", kv)
	}
	var m map[string]any
	if _, err := toml.Decode(k+" = "+strings.TrimSpace(v), &m); err == nil {
		return k, m[k], nil
	}
	return k, strings.TrimSpace(v), nil
}
