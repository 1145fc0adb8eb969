package conformance

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSettingsSourceConfigAndSet(t *testing.T) {
	project := map[string]any{"seed": int64(1), "deadlines": map[string]any{"turn": int64(5)}}
	raw, file, dir, err := settingsSource(project, "pyproject.toml", "/p", "", []string{"seed=7", "deadlines={session = 9}", "engine=codex", `skip={LEAK-LOG="reviewed"}`})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"seed": int64(7), "deadlines": map[string]any{"turn": int64(5), "session": int64(9)}, "engine": "codex",
		"skip": map[string]any{"LEAK-LOG": "reviewed"}}
	if !reflect.DeepEqual(raw, want) || file != "pyproject.toml and --set" || dir != "/p" {
		t.Errorf("got %v %q %q, want %v", raw, file, dir, want)
	}
	if project["seed"] != int64(1) {
		t.Error("the project's settings were modified")
	}
	s, err := ParseSettings(raw, file, dir)
	if err != nil || *s.Seed != 7 || s.Engine != "codex" {
		t.Errorf("parsed %+v, %v", s, err)
	}

	cfgDir := t.TempDir()
	for name, body := range map[string]string{
		"ci.toml":        "seed = 3\npython-path = [\"lib\"]\n",
		"pyproject.toml": "[project]\nname = \"x\"\n[tool.astrabox]\nseed = 4\n",
		"bad.toml":       "seed = \n",
	} {
		if err := os.WriteFile(filepath.Join(cfgDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, file, dir, err = settingsSource(project, "pyproject.toml", "/p", filepath.Join(cfgDir, "ci.toml"), nil)
	if err != nil || raw["seed"] != int64(3) || dir != cfgDir || !strings.HasSuffix(file, "ci.toml") {
		t.Errorf("--config ci.toml: %v %q %q %v", raw, file, dir, err)
	}
	if s, err := ParseSettings(raw, file, dir); err != nil || s.PythonPath[0] != filepath.Join(cfgDir, "lib") {
		t.Errorf("python-path of a --config file is not relative to it: %+v %v", s, err)
	}
	if raw, _, _, err := settingsSource(nil, "", "/p", filepath.Join(cfgDir, "pyproject.toml"), nil); err != nil || raw["seed"] != int64(4) {
		t.Errorf("--config pyproject.toml: %v %v", raw, err)
	}
	for cfg, want := range map[string]string{"bad.toml": "bad.toml:1:", "missing.toml": "missing.toml"} {
		if _, _, _, err := settingsSource(nil, "", "/p", filepath.Join(cfgDir, cfg), nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--config %s: %v", cfg, err)
		}
	}
	for _, bad := range []string{"seed", "=7", "a b=1"} {
		if _, _, _, err := settingsSource(nil, "", "/p", "", []string{bad}); err == nil || !strings.Contains(err.Error(), "use KEY=VALUE") {
			t.Errorf("--set %q: %v", bad, err)
		}
	}
}

// TestImageWrapperRealCLISetting: image-wrapper-real-cli names the CLI the wrapper hard-codes (absolute as
// written, or relative to the project), and needs image-wrapper.
func TestImageWrapperRealCLISetting(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wrapper"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := ParseSettings(map[string]any{"image-wrapper": "wrapper", "image-wrapper-real-cli": "/opt/claude/bin/claude"}, "pyproject.toml", dir)
	if err != nil || s.ImageWrapperRealCLI != "/opt/claude/bin/claude" {
		t.Fatalf("settings %+v, err %v", s, err)
	}
	s, err = ParseSettings(map[string]any{"image-wrapper": "wrapper", "image-wrapper-real-cli": "vendor/claude"}, "pyproject.toml", dir)
	if err != nil || s.ImageWrapperRealCLI != filepath.Join(dir, "vendor/claude") {
		t.Fatalf("relative: settings %+v, err %v", s, err)
	}
	for raw, want := range map[string]string{"": "must be the path", "/x": "image-wrapper names no wrapper"} {
		if _, err := ParseSettings(map[string]any{"image-wrapper-real-cli": raw}, "pyproject.toml", dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", raw, err, want)
		}
	}
}
