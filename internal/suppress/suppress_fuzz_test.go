package suppress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// FuzzComment reads inline suppression comments from any source text: a finding at any path and line, for
// any check. Whatever the file holds, Apply never panics, suppresses only a finding whose line (inside the
// project) carries an ignore comment naming its check and a reason, never one in a file outside the project
// (where every line suppresses everything), keeps the summary true, and writes each warning on one line with no control character of the file (a
// carriage return or a terminal escape) in it.
func FuzzComment(f *testing.F) {
	f.Add([]byte("x = 1  # astrabox: ignore[LEAK-LOG] a fixture token\n"), "p.py", 1, "LEAK-LOG")
	f.Add([]byte("x = 1  # astrabox: ignore[LEAK-LOG, LEAK-ERROR]\n"), "p.py", 1, "LEAK-ERROR")
	f.Add([]byte("a\n#astrabox:ignore[]]] why\n"), "./p.py", 2, "")
	f.Add([]byte("# astrabox: ignore[GEN-SETTLES] reason\r\n"), "../outside.py", 1, "GEN-SETTLES")
	f.Add([]byte("\xff# astrabox: ignore[\x1b[2JLEAK-LOG] r\n"), "p.py", 1, "LEAK-LOG")
	dir := f.TempDir()
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		f.Fatal(err)
	}
	outside := strings.Repeat("# astrabox: ignore[LEAK-LOG, LEAK-ERROR, GEN-SETTLES, PLAN-SYNC, ] outside the project\n", 8)
	if err := os.WriteFile(filepath.Join(dir, "outside.py"), []byte(outside), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src []byte, path string, line int, check string) {
		if len(src) > 64<<10 {
			return
		}
		if err := os.WriteFile(filepath.Join(project, "p.py"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		rep := &report.Report{Provider: report.Provider{Project: project}, Results: []report.Result{
			{Check: check, Status: report.StatusFailed, Message: "finding", Location: &report.Location{Path: path, Line: line}},
			{Check: check, Status: report.StatusWarning, Message: "finding", Evidence: []report.Evidence{{Location: &report.Location{Path: filepath.Join(project, path), Line: line}}}},
		}}
		rep, warnings := Apply(rep, func(id string) bool { return id == "LEAK-LOG" })
		for _, w := range warnings {
			if strings.IndexFunc(w, unicode.IsControl) >= 0 {
				t.Fatalf("a warning with a control character (a line break or a terminal escape from the source): %q", w)
			}
		}
		skipped := 0
		for _, res := range rep.Results {
			if res.Status != report.StatusSkipped {
				continue
			}
			skipped++
			if strings.IndexFunc(res.Message, unicode.IsControl) >= 0 {
				t.Fatalf("a suppressed result's message carries a control character of the source: %q", res.Message)
			}
			if !strings.HasPrefix(res.Message, "suppressed at ") {
				t.Fatalf("suppressed with message %q", res.Message)
			}
			p := filepath.Join(project, path)
			if filepath.IsAbs(path) {
				p = path
			}
			if rel, err := filepath.Rel(project, p); err != nil || strings.HasPrefix(rel, "..") {
				t.Fatalf("suppressed by a file outside the project: %q", path)
			}
			lines := strings.Split(string(src), "\n")
			if line < 1 || line > len(lines) {
				t.Fatalf("suppressed by line %d of a %d-line file", line, len(lines))
			}
			l := lines[line-1]
			if !strings.Contains(l, "astrabox") || !strings.Contains(l, "ignore[") || !strings.Contains(l, check) {
				t.Fatalf("line %q suppressed %q", l, check)
			}
		}
		if rep.Summary.Skipped != skipped || rep.Summary.Total != len(rep.Results) {
			t.Fatalf("summary %+v with %d suppressed", rep.Summary, skipped)
		}
	})
}
