package harness

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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
	skipShort(t)
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

// TestProviderBytecodeCache: the provider's modules are compiled once into the kit's cache (hash-checked), and
// an edit made at once, keeping the file's size, is seen by the next process: the cache can never be stale.
func TestProviderBytecodeCache(t *testing.T) {
	skipShort(t)
	project := t.TempDir()
	if err := os.CopyFS(project, os.DirFS(fixtureDir(t, "good"))); err != nil {
		t.Fatal(err)
	}
	source := filepath.Join(project, "src", "good_provider", "provider.py")
	sdk, err := SDKDir()
	if err != nil {
		t.Fatal(err)
	}
	cached, _ := filepath.Glob(filepath.Join(pycacheDir(sdk), "provider", "*", strings.TrimPrefix(source, "/")+".pyc"))
	for _, f := range cached {
		os.Remove(f)
	}
	plan := func() string {
		p, _ := startLoaded(t, project, "good_provider.provider:Provider", Options{})
		defer p.Close()
		r, err := call(t, p, "plan", map[string]any{"config": map[string]any{}}, 5*time.Second)
		if err != nil || !r.OK {
			t.Fatalf("plan: %v %+v", err, r)
		}
		return r.Stdout.String()
	}
	if got := plan(); got != "plan stdout\n" {
		t.Fatalf("first run printed %q", got)
	}
	cached, _ = filepath.Glob(filepath.Join(pycacheDir(sdk), "provider", "*", strings.TrimPrefix(source, "/")+".pyc"))
	if len(cached) != 1 {
		t.Fatalf("no cached bytecode for %s", source)
	}
	before, _ := os.Stat(cached[0])
	if got := plan(); got != "plan stdout\n" {
		t.Fatalf("second run printed %q", got)
	}
	if after, err := os.Stat(cached[0]); err != nil || !os.SameFile(before, after) {
		t.Errorf("the second run compiled again instead of using the cached bytecode (%v)", err)
	}
	text, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(text), `print("plan stdout")`, `print("plan STDOUT")`, 1)
	if edited == string(text) {
		t.Fatal("the fixture no longer prints plan stdout")
	}
	info, _ := os.Stat(source)
	if err := os.WriteFile(source, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(source, info.ModTime(), info.ModTime()) // same size, same time: only the hash can tell
	if got := plan(); got != "plan STDOUT\n" {
		t.Fatalf("after the edit the provider printed %q: stale bytecode", got)
	}
}
