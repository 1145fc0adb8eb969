package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedFilesAreCurrent fails when docs/checks.md, docs/cli.md, docs/man or completions/ differ from
// what the code generates: run `make docs` and commit.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := GeneratedFiles()
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range files {
		got, err := os.ReadFile(repoPath(rel))
		if err != nil {
			t.Errorf("%s is missing: run `make docs`", rel)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `make docs` and commit the result", rel)
		}
	}
	pages, _ := filepath.Glob(repoPath("docs/man/*.1"))
	for _, p := range pages {
		rel := "docs/man/" + filepath.Base(p)
		if _, ok := files[rel]; !ok {
			t.Errorf("%s is no longer generated: run `make docs`", rel)
		}
	}
}

func TestManPagesAreReproducible(t *testing.T) {
	a, err := GeneratedFiles()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GeneratedFiles()
	for k := range a {
		if !bytes.Equal(a[k], b[k]) {
			t.Errorf("%s differs between two generations", k)
		}
		if strings.HasPrefix(k, "docs/man/") && bytes.Contains(a[k], []byte("Auto generated")) {
			t.Errorf("%s carries an auto-generated tag", k)
		}
	}
}

// TestBashCompletionCompletesSubcommand loads the generated bash completion in a real bash and completes
// `astrabox conf<TAB>` through the real binary.
func TestBashCompletionCompletesSubcommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary (skipped under -short)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	bin := kitBinary(t)
	script := `
if [ -f /usr/share/bash-completion/bash_completion ]; then
  source /usr/share/bash-completion/bash_completion
else
  # Minimal stand-in for bash-completion's helper when the package is absent.
  _get_comp_words_by_ref() { cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
fi
source "$COMPLETION"
COMP_WORDS=(astrabox conf)
COMP_CWORD=1
COMP_LINE="astrabox conf"
COMP_POINT=${#COMP_LINE}
__start_astrabox astrabox conf astrabox
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), "COMPLETION="+repoPath("completions/astrabox.bash"), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "conformance") {
		t.Fatalf("completion did not offer conformance: %q", out)
	}
}
