package simulate

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// A provider can leak a secret into a file as well as into its output: a debug dump in its home, a cache in
// its temporary directory, a note next to its code. At the end of a scenario the platform reads every file a
// replica process wrote (every file in the host directories it was given, which start empty, and every file
// of the project directory modified since the scenario began) so that LEAK-LOG can hunt them.

// FilePlace is where a replica wrote a file.
type FilePlace string

// The places a replica writes files to.
const (
	PlaceHome    FilePlace = "home"
	PlaceTemp    FilePlace = "temporary directory"
	PlaceScratch FilePlace = "scratch directory"
	PlaceProject FilePlace = "project directory"
)

// Bounds of the file hunt: how much of one file is read, how much in all per scenario, and how many entries
// of a directory tree are looked at. A file larger than FileReadBytes is hunted in its first FileReadBytes;
// the record says so.
const (
	FileReadBytes   = 1 << 20
	filesTotalBytes = 32 << 20
	filesMaxEntries = 20_000
)

// WrittenFile is one file a replica wrote during a scenario.
type WrittenFile struct {
	// Replica is the replica whose host directories hold the file; empty for the project directory, which
	// every replica shares.
	Replica string    `json:"replica,omitempty"`
	Place   FilePlace `json:"place"`
	// Path is relative to the place.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Truncated says that only the first FileReadBytes were read.
	Truncated bool `json:"truncated,omitempty"`
	content   []byte
}

// Content is what was read of the file (at most FileReadBytes).
func (f WrittenFile) Content() []byte { return f.content }

// skipProjectDir names the directories of a project that are not the provider's writing: version control,
// the kit's own state, Python's byte-code caches and virtual environments.
func skipProjectDir(name string) bool {
	switch name {
	case ".git", ".hg", ".svn", ".astrabox", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules",
		".venv", "venv", ".tox", ".nox":
		return true
	}
	return false
}

// fileBudget is what is left of a scenario's file hunt.
type fileBudget struct{ bytes, entries int }

// collectFiles lists the regular files under root (symbolic links are not followed) modified at or after since
// (every file when since is zero), reading each up to FileReadBytes while the budget lasts.
func collectFiles(root, replica string, place FilePlace, since time.Time, skip func(string) bool, b *fileBudget) []WrittenFile {
	var out []WrittenFile
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if b.entries--; b.entries < 0 {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if path != root && skip != nil && skip(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || (!since.IsZero() && info.ModTime().Before(since)) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return nil
		}
		f := WrittenFile{Replica: replica, Place: place, Path: filepath.ToSlash(rel), Size: info.Size()}
		f.content = readBounded(path, min(FileReadBytes, b.bytes))
		b.bytes -= len(f.content)
		f.Truncated = int64(len(f.content)) < f.Size
		out = append(out, f)
		return nil
	})
	return out
}

// readBounded reads at most n bytes of a regular file without blocking on anything else (a FIFO put in
// place of the file after the walk is not opened for reading: O_NONBLOCK).
func readBounded(path string, n int) []byte {
	if n <= 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	buf, _ := io.ReadAll(io.LimitReader(f, int64(n)))
	return buf
}

// writtenFiles collects the files the scenario's replica processes wrote: their host directories (home,
// temporary and scratch) and the project directory's files modified since the scenario began.
func (p *platform) writtenFiles() []WrittenFile {
	b := &fileBudget{bytes: filesTotalBytes, entries: filesMaxEntries}
	var out []WrittenFile
	p.mu.Lock()
	hosts := append([]*host(nil), p.hostDirs...)
	p.mu.Unlock()
	for _, h := range hosts {
		for _, d := range []struct {
			sub   string
			place FilePlace
		}{{"home", PlaceHome}, {"tmp", PlaceTemp}, {"scratch", PlaceScratch}} {
			out = append(out, collectFiles(filepath.Join(h.root, d.sub), h.replica, d.place, time.Time{}, nil, b)...)
		}
	}
	if p.o.ProjectDir != "" && !p.begun.IsZero() {
		out = append(out, collectFiles(p.o.ProjectDir, "", PlaceProject, p.begun, skipProjectDir, b)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, c := out[i], out[j]
		if a.Place != c.Place {
			return a.Place < c.Place
		}
		if a.Replica != c.Replica {
			return a.Replica < c.Replica
		}
		return strings.Compare(a.Path, c.Path) < 0
	})
	return out
}
