package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCollectFilesReadsWhatAReplicaWrote: every regular file under a host directory is read (bounded), files
// of the project only when modified since the scenario began and outside the caches; a FIFO or a symbolic
// link (to a file outside, say) is never opened.
func TestCollectFilesReadsWhatAReplicaWrote(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".cache/app/dump.json", `{"token": "secret"}`)
	write("big.bin", strings.Repeat("x", FileReadBytes+10))
	write("__pycache__/m.pyc", "cached")
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	b := &fileBudget{bytes: filesTotalBytes, entries: filesMaxEntries}
	got := map[string]WrittenFile{}
	for _, f := range collectFiles(root, "r1", PlaceHome, time.Time{}, skipProjectDir, b) {
		got[f.Path] = f
	}
	if f, ok := got[".cache/app/dump.json"]; !ok || string(f.Content()) != `{"token": "secret"}` || f.Replica != "r1" || f.Truncated {
		t.Errorf("dump: %+v", f)
	}
	if f := got["big.bin"]; len(f.Content()) != FileReadBytes || !f.Truncated || f.Size != FileReadBytes+10 {
		t.Errorf("big file read %d bytes, truncated %v, size %d", len(f.Content()), f.Truncated, f.Size)
	}
	for _, p := range []string{"__pycache__/m.pyc", "pipe", "link"} {
		if _, ok := got[p]; ok {
			t.Errorf("%s was read", p)
		}
	}
	// Only files modified since the scenario began.
	later := time.Now().Add(time.Hour)
	if fs := collectFiles(root, "", PlaceProject, later, skipProjectDir, b); len(fs) != 0 {
		t.Errorf("files older than the scenario were read: %+v", fs)
	}
}
