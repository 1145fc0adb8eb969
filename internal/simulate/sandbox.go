package simulate

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
)

// Fixed places inside every fake sandbox.
const (
	// SandboxHome is the workload's private home.
	SandboxHome = "/home/workload"
	// SandboxWorkspace is the task workspace.
	SandboxWorkspace = "/workspace"
	// PluginCacheDir holds the package checkouts the platform prepares before synchronize.
	PluginCacheDir = "/opt/astrabox/plugins"
	// SkillsDir is the prepared Skills directory.
	SkillsDir = "/opt/astrabox/skills"
	// runtimeFilesDir is where the platform delivers RuntimeFile entries, per Session.
	runtimeFilesDir = SandboxHome + "/.astrabox/runtime"
)

// Owners of files in a fake sandbox.
const (
	OwnerWorkload = "workload"
	OwnerRoot     = "root"
)

// imageDirs are read-only parts of the image: the provider may not write there (IMAGE-NO-RETROFIT).
var imageDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/etc", "/opt"}

// ImagePath is the PATH of the image, used to tell whether a written file could shadow an image command.
var ImagePath = []string{SandboxHome + "/.local/bin", SandboxHome + "/bin", "/usr/local/bin", "/usr/bin", "/bin"}

// File is one file in a fake sandbox.
type File struct {
	Content []byte
	Mode    uint32
	Owner   string
}

// Sandbox is an in-memory sandbox filesystem. Go is its source of truth; the provider reaches it through the
// SandboxHandle the harness forwards over the protocol.
type Sandbox struct {
	ID    string
	mu    sync.Mutex
	files map[string]*File
	dirs  map[string]bool
}

// NewSandbox returns an empty sandbox with its home and workspace.
func NewSandbox(id string) *Sandbox {
	s := &Sandbox{ID: id, files: map[string]*File{}, dirs: map[string]bool{"/": true}}
	s.mkdirAll(SandboxHome)
	s.mkdirAll(SandboxWorkspace)
	return s
}

// SandboxError is a filesystem error with the Python exception type the handle raises for it.
type SandboxError struct {
	Type string
	Path string
	Msg  string
}

func (e *SandboxError) Error() string { return fmt.Sprintf("%s: %s", e.Msg, e.Path) }

func cleanPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", &SandboxError{Type: "OSError", Path: p, Msg: "sandbox paths must be absolute"}
	}
	return path.Clean(p), nil
}

func (s *Sandbox) mkdirAll(dir string) {
	for d := dir; ; d = path.Dir(d) {
		s.dirs[d] = true
		if d == "/" {
			return
		}
	}
}

// PlatformWrite writes a file as the platform does (no image protection), creating parent directories.
func (s *Sandbox) PlatformWrite(p string, content []byte, mode uint32, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p = path.Clean(p)
	s.mkdirAll(path.Dir(p))
	// The platform's material is never changed once decoded, and a file is replaced, never changed in place,
	// when written: keep the bytes rather than a copy of every delivery.
	s.files[p] = &File{Content: content, Mode: mode, Owner: owner}
}

// meta returns a file's mode, owner and size without copying its content.
func (s *Sandbox) meta(p string) (mode uint32, owner string, size int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[path.Clean(p)]
	if !ok {
		return 0, "", 0, false
	}
	return f.Mode, f.Owner, len(f.Content), true
}

// Write writes a file on behalf of the provider. Writes into the image's read-only directories are refused
// with PermissionError.
func (s *Sandbox) Write(p string, content []byte, mode uint32) error {
	cp, err := cleanPath(p)
	if err != nil {
		return err
	}
	for _, d := range imageDirs {
		if cp == d || strings.HasPrefix(cp, d+"/") {
			return &SandboxError{Type: "PermissionError", Path: cp, Msg: "read-only image directory"}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirs[cp] {
		return &SandboxError{Type: "IsADirectoryError", Path: cp, Msg: "is a directory"}
	}
	s.mkdirAll(path.Dir(cp))
	s.files[cp] = &File{Content: append([]byte(nil), content...), Mode: mode, Owner: OwnerWorkload}
	return nil
}

// Read returns a file's content.
func (s *Sandbox) Read(p string) ([]byte, error) {
	cp, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[cp]; ok {
		return append([]byte(nil), f.Content...), nil
	}
	if s.dirs[cp] {
		return nil, &SandboxError{Type: "IsADirectoryError", Path: cp, Msg: "is a directory"}
	}
	return nil, &SandboxError{Type: "FileNotFoundError", Path: cp, Msg: "no such file"}
}

// Exists tells whether a file or directory exists.
func (s *Sandbox) Exists(p string) bool {
	cp, err := cleanPath(p)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.files[cp]
	return ok || s.dirs[cp]
}

// List returns the sorted names directly inside a directory.
func (s *Sandbox) List(p string) ([]string, error) {
	cp, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirs[cp] {
		if _, ok := s.files[cp]; ok {
			return nil, &SandboxError{Type: "NotADirectoryError", Path: cp, Msg: "not a directory"}
		}
		return nil, &SandboxError{Type: "FileNotFoundError", Path: cp, Msg: "no such directory"}
	}
	seen := map[string]bool{}
	add := func(q string) {
		if path.Dir(q) == cp && q != cp {
			seen[path.Base(q)] = true
		}
	}
	for q := range s.files {
		add(q)
	}
	for q := range s.dirs {
		add(q)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Remove deletes a file.
func (s *Sandbox) Remove(p string) error {
	cp, err := cleanPath(p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[cp]; !ok {
		return &SandboxError{Type: "FileNotFoundError", Path: cp, Msg: "no such file"}
	}
	delete(s.files, cp)
	return nil
}

// Stat returns a copy of a file's metadata and content.
func (s *Sandbox) Stat(p string) (File, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[path.Clean(p)]
	if !ok {
		return File{}, false
	}
	return File{Content: append([]byte(nil), f.Content...), Mode: f.Mode, Owner: f.Owner}, true
}

// Paths returns every file path, sorted.
func (s *Sandbox) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.files))
	for p := range s.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// RuntimeFileDir is the directory where the platform delivers a Session's RuntimeFile entries in a sandbox.
// It depends only on the Session, so it is stable for that Session and sandbox.
func RuntimeFileDir(sessionID string) string {
	return runtimeFilesDir + "/" + sessionID
}
