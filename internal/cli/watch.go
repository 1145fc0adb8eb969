package cli

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/report"
)

// watchInterval is how often `conformance run --watch` looks at the watched files' modification times.
// Polling needs no platform file-event API (inotify, kqueue) and no new dependency; a provider's code is a
// few hundred files at most, so a look costs well under a millisecond.
const watchInterval = 300 * time.Millisecond

// maxWatchedFiles bounds how many files a watch looks at, so that a code root pointing at a huge tree
// cannot make every look slow.
const maxWatchedFiles = 20000

// fileStamp is what a watch compares of a file: its modification time and size.
type fileStamp struct {
	mod  time.Time
	size int64
}

// watchSet is the files a watch looks at: the provider's code roots (*.py files) and its settings
// (pyproject.toml, setup.cfg, setup.py, the settings file, --config).
type watchSet struct {
	roots []string
	files []string
}

// watchFiles decides what to watch for the project the run resolves (project as given, "" for the nearest).
func watchFiles(project, configFile string) (*watchSet, error) {
	dir := projectDir(project)
	if project == "" {
		root, err := discovery.FindProjectRoot(dir)
		if err != nil {
			return nil, err
		}
		dir = root
	}
	p, err := discovery.LoadProject(dir)
	if err != nil {
		return nil, err
	}
	ws := &watchSet{}
	for _, r := range p.CodeRoots {
		if !filepath.IsAbs(r) {
			r = filepath.Join(p.Dir, r)
		}
		ws.roots = append(ws.roots, r)
	}
	if len(ws.roots) == 0 {
		ws.roots = []string{p.Dir}
	}
	for _, f := range []string{p.Pyproject, p.SetupCfg, p.SetupPy, p.SettingsFile, configFile} {
		if f != "" && !slices.Contains(ws.files, f) {
			ws.files = append(ws.files, f)
		}
	}
	return ws, nil
}

// skipDir tells whether a directory under a code root holds nothing of the provider's own code.
func skipDir(name string) bool {
	return name == "__pycache__" || name == "node_modules" || name == "site-packages" ||
		(strings.HasPrefix(name, ".") && name != ".")
}

// snapshot stamps every watched file.
func (ws *watchSet) snapshot() map[string]fileStamp {
	out := map[string]fileStamp{}
	stamp := func(p string) {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			out[p] = fileStamp{st.ModTime(), st.Size()}
		}
	}
	for _, f := range ws.files {
		stamp(f)
	}
	for _, root := range ws.roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil
			case len(out) >= maxWatchedFiles:
				return filepath.SkipAll
			case d.IsDir() && p != root && skipDir(d.Name()):
				return filepath.SkipDir
			case !d.IsDir() && strings.HasSuffix(d.Name(), ".py"):
				stamp(p)
			}
			return nil
		})
	}
	return out
}

// changedFiles lists the files added, removed or modified between two snapshots, sorted.
func changedFiles(before, after map[string]fileStamp) []string {
	var out []string
	for p, a := range after {
		if b, ok := before[p]; !ok || !b.mod.Equal(a.mod) || b.size != a.size {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// waitForChange looks at the watched files every interval until one changes (returning what changed) or
// ctx ends (returning nil).
func waitForChange(ctx context.Context, ws *watchSet, before map[string]fileStamp, interval time.Duration) []string {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if changed := changedFiles(before, ws.snapshot()); len(changed) > 0 {
			return changed
		}
	}
}

// verdicts is each check's status in a report.
func verdicts(rep *report.Report) map[string]report.Status {
	out := map[string]report.Status{}
	for _, r := range rep.Results {
		out[r.Check] = r.Status
	}
	return out
}

// writeVerdictChanges says what changed in the verdicts since the previous run, one check a line, failures
// first.
func writeVerdictChanges(w io.Writer, before, after map[string]report.Status) {
	var lines []string
	for id, now := range after {
		was, ok := before[id]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("  %s: %s (not judged before)", id, now))
		case was != now:
			lines = append(lines, fmt.Sprintf("  %s: %s -> %s", id, was, now))
		}
	}
	for id, was := range before {
		if _, ok := after[id]; !ok {
			lines = append(lines, fmt.Sprintf("  %s: %s -> not judged", id, was))
		}
	}
	if len(lines) == 0 {
		fmt.Fprintln(w, "watch: no verdict changed since the previous run")
		return
	}
	slices.Sort(lines)
	fmt.Fprintf(w, "watch: %d verdict(s) changed since the previous run:\n%s\n", len(lines), strings.Join(lines, "\n"))
}

// runConformanceWatch runs the suite, then again whenever the provider's code or settings change, saying
// after each run what changed in the verdicts, until interrupted (exit 0: a watch is ended by the user).
func runConformanceWatch(parent context.Context, f *Factory, o *RunOptions) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := signalContext(parent)
	defer cancel()
	ws, err := watchFiles(o.Project, o.ConfigFile)
	if err != nil {
		return asUndecided(fmt.Errorf("watch: %w", err))
	}
	var before map[string]report.Status
	for run := 1; ; run++ {
		stamps := ws.snapshot()
		var rep *report.Report
		o.onReport = func(r *report.Report) { rep = r }
		err := runConformance(ctx, f, o)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case rep == nil:
			fmt.Fprintf(f.IO.Err, "watch: run %d could not decide: %s\n", run, errorText(err.Error()))
		case before == nil:
			before = verdicts(rep)
		default:
			after := verdicts(rep)
			writeVerdictChanges(f.IO.Err, before, after)
			before = after
		}
		fmt.Fprintf(f.IO.Err, "watch: watching %d file(s) under %s for changes (Ctrl-C to stop)\n", len(stamps), strings.Join(ws.roots, ", "))
		changed := waitForChange(ctx, ws, stamps, watchInterval)
		if changed == nil {
			return nil
		}
		shown := changed
		if len(shown) > 3 {
			shown = append(shown[:3:3], fmt.Sprintf("%d more", len(changed)-3))
		}
		fmt.Fprintf(f.IO.Err, "watch: %s changed; running again\n", strings.Join(shown, ", "))
	}
}
