package harness

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// resultKindLiteral matches a result kind written as a string literal: a bare plan/materials/state name, or
// a Result's Type set or compared to one.
var resultKindLiteral = regexp.MustCompile(`"(RuntimePreparationPlan|RuntimeMaterials|SessionUserActionState)"|Type\s*(?:[!=]=|:)\s*"(bool|none|other|coroutine)"`)

// TestResultKindsAreTyped holds every Go file of the kit (tests included) to the typed ResultKind constants:
// a kind spelled as a literal compiles against the string it happens to be today and silently stops
// matching when the harness renames it.
func TestResultKindsAreTyped(t *testing.T) {
	root := ".."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "python" || d.Name() == "pytests") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || path == filepath.Join("..", "harness", "messages.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			// JSON wire text (`"type":"RuntimeMaterials"`) is the harness's own spelling, not a comparison.
			if loc := resultKindLiteral.FindStringIndex(line); loc != nil && (loc[0] == 0 || line[loc[0]-1] != ':') {
				m := line[loc[0]:loc[1]]
				t.Errorf("%s:%d: result kind written as the literal %s; use the harness.Kind* (simulate.Kind*) constants", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rawValidityRead matches code that reads the raw turn_validity_seconds of a result (setting it, as a
// default result does, is not a read).
var rawValidityRead = regexp.MustCompile(`\.TurnValiditySeconds\b`)

// TestTurnValidityIsDecodedOnce: outside messages.go no kit code (tests aside) reads the raw
// turn_validity_seconds; the platform and the checks share Result.Validity, so they cannot disagree on what
// a valid validity is.
func TestTurnValidityIsDecodedOnce(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			path == filepath.Join("..", "harness", "messages.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if rawValidityRead.MatchString(line) {
				t.Errorf("%s:%d: reads turn_validity_seconds raw; use Result.Validity (harness.DecodeTurnValidity)", path, i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
