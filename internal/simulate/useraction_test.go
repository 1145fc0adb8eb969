package simulate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// userActionCase is one row of testdata/user_actions.json.
type userActionCase struct {
	Name    string   `json:"name"`
	Message string   `json:"message"`
	URL     *string  `json:"url"`
	Status  string   `json:"status"`
	Invalid []string `json:"invalid"`
}

func userActionTable(t *testing.T) []userActionCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "user_actions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []userActionCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Cases) < 20 {
		t.Fatalf("the table has only %d cases", len(table.Cases))
	}
	return table.Cases
}

// fieldsOf names the fields a list of problems concerns (each problem starts with its field).
func fieldsOf(problems []string) []string {
	var out []string
	for _, p := range problems {
		f, _, _ := strings.Cut(p, " ")
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// TestValidateUserActionTable holds the Go validator to the shared table.
func TestValidateUserActionTable(t *testing.T) {
	for _, c := range userActionTable(t) {
		got := fieldsOf(ValidateUserAction(c.Message, c.URL, c.Status))
		want := append([]string{}, c.Invalid...)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: Go refuses %v, the table says %v (problems: %v)", c.Name, got, want, ValidateUserAction(c.Message, c.URL, c.Status))
		}
	}
}

// TestPythonValidateUserActionTable holds the Python SDK's validator to the same table, so that the kit's
// host validation and the SDK a provider tests with give the same answer.
func TestPythonValidateUserActionTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	table, _ := filepath.Abs(filepath.Join("testdata", "user_actions.json"))
	sdk, _ := filepath.Abs(filepath.Join("..", "harness", "python"))
	script := `
import json, sys
sys.path.insert(0, sys.argv[2])
from astrabox import seams
cases = json.load(open(sys.argv[1]))["cases"]
out = {}
for c in cases:
    problems = seams.validate_user_action(c["message"], c["url"], c["status"])
    out[c["name"]] = sorted({p.split(" ", 1)[0] for p in problems})
json.dump(out, sys.stdout)
`
	raw, err := exec.Command(py, "-I", "-c", script, table, sdk).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got map[string][]string
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("python output %q: %v", raw, err)
	}
	for _, c := range userActionTable(t) {
		want := append([]string{}, c.Invalid...)
		slices.Sort(want)
		if g := got[c.Name]; !slices.Equal(append([]string{}, g...), want) {
			t.Errorf("%s: Python refuses %v, the table says %v", c.Name, g, want)
		}
	}
}
