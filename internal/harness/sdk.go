package harness

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// sdkFS holds the Python side: the astrabox package (seams and the runner).
//
//go:embed all:python
var sdkFS embed.FS

// sdkRoot is the directory of sdkFS that holds the astrabox package.
const sdkRoot = "python"

var (
	sdkOnce sync.Once
	sdkDir  string
	sdkErr  error
)

// SDKDir returns a directory holding the embedded SDK (astrabox/seams.py,
// astrabox/_harness/...), suitable for sys.path. The files are extracted once
// into a content-addressed cache directory, <user cache dir>/astrabox/sdk/<hash>
// (falling back to the system temporary directory), written to a temporary
// directory first and renamed into place, so concurrent processes never see a
// partial tree. __pycache__ directories and .pyc files are not extracted.
func SDKDir() (string, error) {
	sdkOnce.Do(func() { sdkDir, sdkErr = extractSDK() })
	return sdkDir, sdkErr
}

type sdkFile struct {
	name string // slash path relative to sdkRoot
	data []byte
}

func sdkFiles() ([]sdkFile, error) {
	var files []sdkFile
	err := fs.WalkDir(sdkFS, sdkRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".pyc") || strings.HasSuffix(p, ".pyo") {
			return nil
		}
		data, err := sdkFS.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, sdkFile{name: strings.TrimPrefix(p, sdkRoot+"/"), data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read embedded sdk: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, nil
}

func sdkHash(files []sdkFile) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.data))
		h.Write(f.data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func extractSDK() (string, error) {
	files, err := sdkFiles()
	if err != nil {
		return "", err
	}
	hash := sdkHash(files)
	var errs []error
	for _, base := range sdkBases() {
		dir, err := extractInto(filepath.Join(base, "astrabox", "sdk"), hash, files)
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("extract the astrabox sdk: %w", errors.Join(errs...))
}

// pycacheDir is where the harness keeps the bytecode of its own modules (and of the standard library modules
// it imports before loading a provider): beside the extracted SDK, in the kit's cache, never in a project.
// Compiling the SDK on every process start cost tens of milliseconds per replica.
func pycacheDir(sdk string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(sdk)), "pycache")
}

func sdkBases() []string {
	var bases []string
	if d, err := os.UserCacheDir(); err == nil && d != "" {
		bases = append(bases, d)
	}
	return append(bases, os.TempDir())
}

// extractInto makes parent/hash hold files, unless it already does.
func extractInto(parent, hash string, files []sdkFile) (string, error) {
	final := filepath.Join(parent, hash)
	if sdkComplete(final, files) {
		return final, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-"+hash+"-")
	if err != nil {
		return "", fmt.Errorf("create temporary directory in %s: %w", parent, err)
	}
	defer os.RemoveAll(tmp) // no-op after a successful rename
	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("create %s: %w", filepath.Dir(p), err)
		}
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", p, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another process may have won the race; its tree is as good.
		if sdkComplete(final, files) {
			return final, nil
		}
		// A stale, incomplete tree: move it aside and retry once.
		aside := final + ".stale-" + filepath.Base(tmp)
		if os.Rename(final, aside) == nil {
			os.RemoveAll(aside)
			if err2 := os.Rename(tmp, final); err2 == nil || sdkComplete(final, files) {
				return final, nil
			}
		}
		return "", fmt.Errorf("move sdk into %s: %w", final, err)
	}
	return final, nil
}

// sdkComplete reports whether dir holds every file with the right size.
func sdkComplete(dir string, files []sdkFile) bool {
	for _, f := range files {
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.name)))
		if err != nil || st.Size() != int64(len(f.data)) {
			return false
		}
	}
	return len(files) > 0 && fileExists(filepath.Join(dir, path.Join("astrabox", "seams.py")))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
