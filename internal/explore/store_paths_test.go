package explore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSavedFailureRecordsNoAbsolutePath: a shrunk failure's YAML may be committed or shared, so it names no
// absolute path: the replay command is relative to the file's directory, and the project's directory is cut
// from the failure message.
func TestSavedFailureRecordsNoAbsolutePath(t *testing.T) {
	project := t.TempDir()
	dir := filepath.Join(project, ".astrabox", "failures")
	sc := Generate(7, 3)
	fl := &Failure{Index: 3, Steps: len(sc.Steps),
		Message: "the provider wrote the secret to " + filepath.Join(project, "src", "provider", "app.py") + ":42"}
	file, err := save(dir, project, "LEAK-LOG", sc, fl)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if strings.Contains(text, project) {
		t.Errorf("the saved failure records the absolute project path %s:\n%s", project, text)
	}
	for _, want := range []string{"# Replay from this file's directory: astrabox simulate run leak-log-", "--project ../..\n", "src/provider/app.py:42"} {
		if !strings.Contains(text, want) {
			t.Errorf("the saved failure lacks %q:\n%s", want, text)
		}
	}
}
