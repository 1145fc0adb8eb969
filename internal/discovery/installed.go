package discovery

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

//go:embed python/entry_points.py
var entryPointsScript string

// InstalledTimeout bounds the interpreter run of InstalledEntryPoints.
const InstalledTimeout = 20 * time.Second

const entryPointsMark = "ASTRABOX-ENTRY-POINTS:"

type installedJSON struct {
	Python      []int `json:"python"`
	EntryPoints []struct {
		Name         string `json:"name"`
		Value        string `json:"value"`
		Distribution string `json:"distribution"`
		Version      string `json:"version"`
		Location     string `json:"location"`
		MetadataDir  string `json:"metadata_dir"`
		URL          string `json:"url"`
		Editable     bool   `json:"editable"`
	} `json:"entry_points"`
}

// InstalledEntryPoints asks the interpreter python which installed distributions declare an entry point of
// the provider group, as importlib.metadata.entry_points sees them on that interpreter's version. It runs an
// embedded standard-library script with its working directory in a fresh temporary directory and with ”
// and projectDir removed from sys.path, so that build leftovers in the project (an *.egg-info directory) do
// not count as installed; the user's PYTHONPATH is kept. The run is bounded by InstalledTimeout.
//
// The declarations have Origin OriginInstalled, the distribution's name, version, location and
// direct_url.json details, and File pointing at the distribution's entry_points.txt. A malformed value is
// returned with a zero Ref.
func InstalledEntryPoints(ctx context.Context, python, projectDir string) ([]Declaration, error) {
	ctx, cancel := context.WithTimeout(ctx, InstalledTimeout)
	defer cancel()
	tmp, err := scratchDir("astrabox-discovery-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	if projectDir != "" {
		if abs, err := filepath.Abs(projectDir); err == nil {
			projectDir = abs
		}
	}
	cmd := exec.CommandContext(ctx, python, "-c", entryPointsScript, Group, projectDir)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "PYTHONSAFEPATH=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = nil
	setProcessGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, &Error{File: python, Message: fmt.Sprintf("listing installed entry points timed out after %s", InstalledTimeout),
			Err: ctx.Err(), Hint: "check that the interpreter starts normally (a sitecustomize or .pth file may hang)"}
	}
	if err != nil {
		return nil, &Error{File: python, Message: "listing installed entry points failed", Err: err,
			Hint: "the interpreter said: " + tail(stderr.String(), 800)}
	}
	var res installedJSON
	found := false
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(line, entryPointsMark) {
			if err := json.Unmarshal([]byte(line[len(entryPointsMark):]), &res); err != nil {
				return nil, &Error{File: python, Message: "unreadable answer from the entry-point listing", Err: err}
			}
			found = true
		}
	}
	if !found {
		return nil, &Error{File: python, Message: "the entry-point listing printed no result",
			Err:  errors.New(tail(stdout.String()+stderr.String(), 800)),
			Hint: "check that this is a CPython 3.9+ interpreter"}
	}
	out := make([]Declaration, 0, len(res.EntryPoints))
	for _, e := range res.EntryPoints {
		d := Declaration{Name: e.Name, Value: e.Value, Origin: OriginInstalled, Distribution: e.Distribution,
			Version: e.Version, Location: e.Location, Editable: e.Editable, SourceURL: e.URL}
		if ref, err := ParseObjectRef(e.Value); err == nil {
			d.Ref = ref
		}
		if e.MetadataDir != "" {
			d.File = filepath.Join(e.MetadataDir, "entry_points.txt")
			d.Line = entryPointLine(d.File, e.Name)
		}
		out = append(out, d)
	}
	return out, nil
}

// entryPointLine finds the line of name in the provider group's section of an entry_points.txt file.
func entryPointLine(path, name string) int {
	b, err := readBounded(path, MaxProjectFileSize)
	if err != nil {
		return 0
	}
	in := false
	for i, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			in = strings.TrimSpace(t[1:len(t)-1]) == Group
			continue
		}
		if k, _, ok := strings.Cut(t, "="); in && ok && strings.TrimSpace(k) == name {
			return i + 1
		}
	}
	return 0
}

// tail returns the last n bytes of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	if s == "" {
		return "(nothing)"
	}
	return s
}
