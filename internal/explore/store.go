package explore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

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

// oneLine makes s one line of a YAML comment: every character YAML (or libyaml) reads as a line break (\n,
// \r, NEL, LS, PS) and every other control character becomes a space, so a message can never end the
// comment and write YAML of its own (FuzzSavedScenario found "\rsteps: []").
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\u0085' {
			return ' '
		}
		return r
	}, s)
	s = strings.ToValidUTF8(s, "?") // a YAML file is UTF-8 throughout, comments included
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "..."
	}
	return s
}

// lastFailed is the record of the last exploration's failures, as written to last-failed.json.
type lastFailed struct {
	Written  time.Time     `json:"written"`
	Failures []failureFile `json:"failures"`
}

// failureFile is one recorded failure: the check and the scenario file, named by its base name inside the
// failure store (older records hold the path it was written to; only its base name is used).
type failureFile struct {
	Check string `json:"check"`
	File  string `json:"file"`
}

// Bounds of what the failure store reads back: a repository can carry a hostile .astrabox/failures.
const (
	// MaxLastFailedSize bounds last-failed.json.
	MaxLastFailedSize = 1 << 20
	// MaxLastFailedEntries bounds the failures it may list.
	MaxLastFailedEntries = 1000
	// MaxScenarioFileSize bounds each saved scenario it names.
	MaxScenarioFileSize = 4 << 20
)

// savedName is the name save gives a shrunk failure (<check>-<seed>.yaml): the only files --last-failed reads.
var savedName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}--?[0-9]{1,20}\.yaml$`)

// checkID is the shape of a check ID in a record.
var checkID = regexp.MustCompile(`^[A-Z][A-Z0-9-]{0,63}$`)

// saveLastFailed records the failures of this exploration (an empty list clears the record).
func saveLastFailed(dir string, failures []Failure) error {
	lf := lastFailed{Written: time.Now().UTC(), Failures: []failureFile{}}
	for _, f := range failures {
		lf.Failures = append(lf.Failures, failureFile{Check: f.Check, File: filepath.Base(f.File)})
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

// ErrNothingRecorded is returned (wrapped) by LastFailed when the last exploration recorded no failure.
var ErrNothingRecorded = errors.New("the last exploration recorded no failing check: nothing to re-run")

// LastFailed loads the scenarios that failed in the last exploration under dir, with the checks they
// failed (each once, in record order). The record and every scenario are read as the store's own files
// only: regular files (never a symlink, a FIFO or a device), bounded in size, and scenario files named as
// save names them, inside dir whatever path the record gives. No error quotes another file's content.
func LastFailed(dir string) ([]*simulate.Scenario, []string, error) {
	record := filepath.Join(dir, lastFailedFile)
	data, err := readStoreFile(record, MaxLastFailedSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("no previous failures recorded in %s; run with --explore first", dir)
		}
		return nil, nil, fmt.Errorf("read last failures: %w", err)
	}
	lf, err := decodeLastFailed(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", record, err)
	}
	if len(lf.Failures) == 0 {
		return nil, nil, fmt.Errorf("%s (%s): %w", record, lf.Written.Format(time.RFC3339), ErrNothingRecorded)
	}
	var out []*simulate.Scenario
	var checks []string
	seen := map[string]bool{}
	for _, f := range lf.Failures {
		path := filepath.Join(dir, filepath.Base(f.File))
		body, err := readStoreFile(path, MaxScenarioFileSize)
		if err != nil {
			return nil, nil, fmt.Errorf("read last failures: %w", err)
		}
		sc, err := simulate.ParseScenario(path, body)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, sc)
		if !seen[f.Check] {
			seen[f.Check] = true
			checks = append(checks, f.Check)
		}
	}
	return out, checks, nil
}

// decodeLastFailed decodes and validates a last-failed record: strict JSON (no unknown field, one value),
// at most MaxLastFailedEntries failures, each a check ID and the name of a saved scenario file. Errors
// quote the record's own strings only, escaped and cut short.
func decodeLastFailed(data []byte) (*lastFailed, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var lf lastFailed
	if err := dec.Decode(&lf); err != nil {
		return nil, fmt.Errorf("not a record of failures written by astrabox (%v); delete it and explore again", err)
	}
	if dec.More() {
		return nil, errors.New("not a record of failures written by astrabox (more than one JSON value); delete it and explore again")
	}
	if len(lf.Failures) > MaxLastFailedEntries {
		return nil, fmt.Errorf("lists %d failures, more than the %d astrabox records; delete it and explore again", len(lf.Failures), MaxLastFailedEntries)
	}
	for i, f := range lf.Failures {
		if !checkID.MatchString(f.Check) {
			return nil, fmt.Errorf("failure %d: %s is not a check ID; delete the file and explore again", i+1, short(f.Check))
		}
		if !savedName.MatchString(filepath.Base(f.File)) {
			return nil, fmt.Errorf("failure %d: %s is not a scenario file of the failure store (CHECK-SEED.yaml); delete the file and explore again", i+1, short(f.File))
		}
	}
	return &lf, nil
}

// short quotes s for an error, escaped and at most 60 characters.
func short(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// readStoreFile reads one file of the failure store: opened without following a symlink and without
// blocking on a FIFO, then it must be a regular file of at most limit bytes.
func readStoreFile(path string, limit int64) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if err == syscall.ELOOP {
			return nil, fmt.Errorf("%s is a symbolic link; the failure store holds the files astrabox wrote, never links", path)
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); the failure store holds the files astrabox wrote", path, st.Mode().Type())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d astrabox writes there", path, st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s grew past %d bytes while it was read", path, limit)
	}
	return data, nil
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
