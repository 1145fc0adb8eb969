package harness

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSDKDirContent(t *testing.T) {
	dir, err := SDKDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"astrabox/__init__.py", "astrabox/seams.py", "astrabox/_harness/__init__.py"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	files, err := sdkFiles()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dir, sdkHash(files)) {
		t.Errorf("dir %s is not named by the content hash %s", dir, sdkHash(files))
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.name)))
		if err != nil || string(got) != string(f.data) {
			t.Errorf("%s differs from the embedded file (%v)", f.name, err)
		}
		if strings.Contains(f.name, "__pycache__") || strings.HasSuffix(f.name, ".pyc") {
			t.Errorf("extracted %s", f.name)
		}
	}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && (info.Name() == "__pycache__" || strings.HasSuffix(p, ".pyc")) {
			t.Errorf("sdk dir holds %s", p)
		}
		return nil
	})
}

func TestExtractConcurrentAndRepair(t *testing.T) {
	files, err := sdkFiles()
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			dirs[i], errs[i] = extractInto(parent, "h", files)
		}(i)
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != filepath.Join(parent, "h") {
			t.Fatalf("extract %d: %q %v", i, dirs[i], errs[i])
		}
	}
	if !sdkComplete(filepath.Join(parent, "h"), files) {
		t.Fatal("extracted tree incomplete")
	}
	left, _ := filepath.Glob(filepath.Join(parent, ".tmp-*"))
	if len(left) != 0 {
		t.Fatalf("temporary directories left behind: %v", left)
	}
	// A damaged tree (a truncated file) is replaced.
	seams := filepath.Join(parent, "h", "astrabox", "seams.py")
	if err := os.WriteFile(seams, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := extractInto(parent, "h", files); err != nil {
		t.Fatal(err)
	}
	if !sdkComplete(filepath.Join(parent, "h"), files) {
		t.Fatal("damaged tree was not repaired")
	}
}

// TestHarnessBytecodeCache: the harness caches its own bytecode under the kit's pycache directory (mirroring
// the SDK's path) and writes none beside the provider's sources.
func TestHarnessBytecodeCache(t *testing.T) {
	project := t.TempDir()
	if err := os.CopyFS(project, os.DirFS(fixtureDir(t, "good"))); err != nil {
		t.Fatal(err)
	}
	sdk, err := SDKDir()
	if err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(pycacheDir(sdk), sdk, "astrabox", "_harness", "runner.*.pyc")
	old, _ := filepath.Glob(pattern)
	for _, f := range old { // a cache left by an earlier run proves nothing
		os.Remove(f)
	}
	p, _ := startLoaded(t, project, "good_provider.provider:Provider", Options{})
	p.Close()
	if got, _ := filepath.Glob(pattern); len(got) == 0 {
		t.Errorf("no cached bytecode for the harness runner: nothing matches %s", pattern)
	}
	filepath.Walk(project, func(path string, info os.FileInfo, err error) error {
		if err == nil && (info.Name() == "__pycache__" || strings.HasSuffix(path, ".pyc")) {
			t.Errorf("the harness wrote bytecode into the provider project: %s", path)
		}
		return nil
	})
}
