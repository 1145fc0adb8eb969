package explore

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// lastFailedFile lists the failures of the last exploration, for --last-failed.
const lastFailedFile = "last-failed.json"

// save writes a shrunk failure as a replayable scenario file named <check>-<seed>.yaml.
// The file records no absolute path (it may be committed, or shared): the replay command is relative to the
// file's own directory, and the project's directory is cut from the failure message.
func save(dir, project, check string, sc *simulate.Scenario, fl *Failure) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("save failure: %w", err)
	}
	body, err := sc.YAML()
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, fmt.Sprintf("%s-%d.yaml", strings.ToLower(check), sc.Seed))
	var b strings.Builder
	fmt.Fprintf(&b, "# astrabox: generated scenario %d (seed %d) failed %s.\n", fl.Index, sc.Seed, check)
	fmt.Fprintf(&b, "# Shrunk from %d to %d steps. %s\n", fl.Steps, len(sc.Steps), oneLine(withoutDir(fl.Message, project)))
	if fl.Flaky {
		fmt.Fprintf(&b, "# FLAKY: %s\n", oneLine(fl.Differed))
	}
	fmt.Fprintf(&b, "# Replay from this file's directory: %s\n", replayFromDir(file, project))
	b.Write(body)
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("save failure: %w", err)
	}
	return file, nil
}

// replayFromDir is the command that replays file, run from the file's directory, naming the project by its
// path relative to that directory.
func replayFromDir(file, project string) string {
	cmd := "astrabox simulate run " + filepath.Base(file)
	if project == "" {
		return cmd
	}
	absFile, err1 := filepath.Abs(file)
	absProject, err2 := filepath.Abs(project)
	if err1 != nil || err2 != nil {
		return cmd
	}
	rel, err := filepath.Rel(filepath.Dir(absFile), absProject)
	if err != nil {
		return cmd
	}
	return cmd + " --project " + filepath.ToSlash(rel)
}

// withoutDir cuts dir (and its trailing separator) from every path in s that starts with it.
func withoutDir(s, dir string) string {
	if dir == "" {
		return s
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return s
	}
	return strings.ReplaceAll(s, abs+string(filepath.Separator), "")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

type lastFailed struct {
	Written  time.Time `json:"written"`
	Failures []struct {
		Check string `json:"check"`
		File  string `json:"file"`
	} `json:"failures"`
}

// saveLastFailed records the failures of this exploration (an empty list clears the record).
func saveLastFailed(dir string, failures []Failure) error {
	var lf lastFailed
	lf.Written = time.Now().UTC()
	for _, f := range failures {
		lf.Failures = append(lf.Failures, struct {
			Check string `json:"check"`
			File  string `json:"file"`
		}{f.Check, f.File})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("record last failures: %w", err)
	}
	data, _ := json.MarshalIndent(lf, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, lastFailedFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("record last failures: %w", err)
	}
	return nil
}

// LastFailed loads the scenarios that failed in the last exploration under dir.
func LastFailed(dir string) ([]*simulate.Scenario, error) {
	data, err := os.ReadFile(filepath.Join(dir, lastFailedFile))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("no previous failures recorded in %s; run with --explore first", dir)
		}
		return nil, fmt.Errorf("read last failures: %w", err)
	}
	var lf lastFailed
	if err := json.Unmarshal(data, &lf); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, lastFailedFile), err)
	}
	var out []*simulate.Scenario
	for _, f := range lf.Failures {
		sc, err := simulate.LoadScenario(f.File)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// progress is a one-line progress display, silent without a writer.
type progress struct {
	w     io.Writer
	total int
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total, start: time.Now()}
}

func (p *progress) update(done, failed, calls, reached int64) {
	if p.w == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && int(done) < p.total {
		return
	}
	p.last = now
	el := now.Sub(p.start).Seconds()
	rate := float64(done) / max(el, 0.001)
	left := "?"
	if rate > 0 {
		left = time.Duration(float64(p.total-int(done)) / rate * float64(time.Second)).Round(time.Second).String()
	}
	cov := ""
	if reached > 0 {
		cov = fmt.Sprintf(" · %d lines and branches reached", reached)
	}
	fmt.Fprintf(p.w, "\r\x1b[Kexplored %d/%d scenarios · %d failing%s · %.1f scenarios/s · %.0f callbacks/s · %s left",
		done, p.total, failed, cov, rate, float64(calls)/max(el, 0.001), left)
}

func (p *progress) finish() {
	if p.w != nil {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
