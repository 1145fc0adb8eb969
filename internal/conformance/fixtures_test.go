package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// expectation is a fixture's expect.json.
type expectation struct {
	Fails          []string `json:"fails"`
	Warns          []string `json:"warns"`
	RequiresModule string   `json:"requires_module"`
	Undecided      bool     `json:"undecided"`
	Note           string   `json:"note"`
}

func fixtureDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, pattern := range []string{"../../testdata/providers/broken/*", "../../testdata/providers/correct/*", "../../examples/providers/*"} {
		m, _ := filepath.Glob(pattern)
		for _, d := range m {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				dirs = append(dirs, d)
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

func runProject(t *testing.T, dir string) (*report.Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	abs, _ := filepath.Abs(dir)
	return Run(ctx, Options{Project: abs, Python: "python3", Jobs: 2, Getenv: func(k string) string {
		if k == "PATH" {
			return os.Getenv("PATH")
		}
		return ""
	}})
}

// TestFixtures runs the suite against every fixture provider and checks that broken ones fail exactly the
// checks they were written to break and that correct ones pass with no failure.
func TestFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	dirs := fixtureDirs(t)
	if len(dirs) == 0 {
		t.Fatal("no fixture providers found")
	}
	for _, dir := range dirs {
		dir := dir
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			var exp expectation
			data, err := os.ReadFile(filepath.Join(dir, "expect.json"))
			if err != nil {
				if !strings.Contains(dir, "examples") {
					t.Fatalf("fixture without expect.json: %v", err)
				}
			} else if err := json.Unmarshal(data, &exp); err != nil {
				t.Fatalf("bad expect.json: %v", err)
			}
			if exp.RequiresModule != "" {
				if err := exec.Command("python3", "-c", "import "+exp.RequiresModule).Run(); err != nil {
					t.Skipf("python3 has no %s module", exp.RequiresModule)
				}
			}
			rep, err := runProject(t, dir)
			if exp.Undecided {
				if err == nil {
					t.Fatalf("expected the kit to refuse to decide, got a report")
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			failed := map[string]report.Result{}
			for _, r := range rep.Results {
				if r.Status == report.StatusFailed {
					failed[r.Check] = r
				}
			}
			for _, id := range exp.Fails {
				if _, ok := failed[id]; !ok {
					t.Errorf("expected %s to fail; results: %s", id, summarize(rep))
				}
			}
			for id, r := range failed {
				if !contains(exp.Fails, id) {
					t.Errorf("unexpected failure %s: %s\n  evidence: %+v", id, r.Message, r.Evidence)
				}
			}
		})
	}
}

func summarize(rep *report.Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		if r.Status != report.StatusPassed {
			b.WriteString("\n  " + r.Check + " " + string(r.Status) + ": " + r.Message)
		}
	}
	return b.String()
}
