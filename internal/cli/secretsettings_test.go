package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/term"
)

// TestSettingsErrorsNeverPrintASecretValue: a settings error on a secret key (a value under
// [tool.astrabox.config.secrets], or a key named like a credential) names the key and its line and never the
// value, wherever the settings come from (pyproject.toml, astrabox.toml, --config, --set) and in every output
// the error reaches: the text on stderr, the JSON and JUnit formats on stdout, and the --junit, --output and
// --json files. The TOML decoder used to quote the value ("12345678901234567890 is out of range for int64",
// "found \"Sup\"").
func TestSettingsErrorsNeverPrintASecretValue(t *testing.T) {
	const head = "[project]\nname = \"p\"\nversion = \"0.1\"\n\n[project.entry-points.\"astrabox.providers.runtime_preparation\"]\np = \"p:Provider\"\n\n"
	type source struct {
		name, pyproject, other, otherName string
		args                              []string
		secret, key                       string
		line                              string // "FILE:LINE" the error must name, "" when it names no file
		// python: the error comes after the interpreter is chosen (settings are read then), so the case
		// needs a real one and is skipped under -short; TOML syntax errors come before.
		python bool
	}
	sources := []source{
		{name: "number out of range", pyproject: head + "[tool.astrabox.config.secrets]\nclient_secret = 12345678901234567890\n",
			secret: "12345678901234567890", key: "client_secret", line: "pyproject.toml:9:"},
		{name: "unquoted text", pyproject: head + "[tool.astrabox.config.secrets]\nclient_secret = Sup3rS3cretValueXYZ123\n",
			secret: "Sup", key: "client_secret", line: "pyproject.toml:9:"},
		{name: "inline secrets table", pyproject: head + "[tool.astrabox]\nconfig = { secrets = { model_api_key = abcdefghijklmnopqrstuvwxyz } }\n",
			secret: "abcdefghijklmno", key: "config", line: "pyproject.toml:9:"},
		{name: "a credential-named key", pyproject: head + "[tool.astrabox.config.deployment]\nclient_secret = 12345678901234567890\n",
			secret: "12345678901234567890", key: "client_secret", line: "pyproject.toml:9:"},
		{name: "astrabox.toml", pyproject: head, otherName: "astrabox.toml", other: "[config.secrets]\ntoken = 98765432109876543210\n",
			secret: "98765432109876543210", key: "config.secrets.token", line: "astrabox.toml:2:"},
		{name: "--config", pyproject: head, otherName: "ci.toml", other: "seed = 3\n[config.secrets]\npassword = hunter2hunter2\n",
			args: []string{"--config", "ci.toml"}, secret: "hunter2", key: "config.secrets.password", line: "ci.toml:3:", python: true},
		{name: "--set with a malformed key", pyproject: head, args: []string{"--set", "config.secrets.api_key [x]=hunter2hunter2"},
			secret: "hunter2", key: "config.secrets.api_key", python: true},
		{name: "secrets given as a text", pyproject: head + "[tool.astrabox.config]\nsecrets = \"hunter2hunter2\"\n",
			secret: "hunter2", key: "config.secrets", line: "pyproject.toml:9", python: true},
	}
	outputs := [][]string{nil, {"--format", "json"}, {"--format", "junit"}, {"--format", "sarif"}, {"--junit", "j.xml", "--json", "r.json", "--output", "o.txt"}}
	for _, src := range sources {
		for _, extra := range outputs {
			t.Run(src.name+" "+strings.Join(extra, " "), func(t *testing.T) {
				python := "/nonexistent/python3"
				if src.python && len(extra) == 2 && extra[1] != "junit" {
					t.Skip("the stdout formats but JUnit print nothing for an error; the JUnit and file cases cover them with a real interpreter")
				}
				if src.python {
					if testing.Short() {
						t.Skip("chooses a real interpreter (skipped under -short)")
					}
					var err error
					if python, err = exec.LookPath("python3"); err != nil {
						t.Skip("no python3")
					}
				}
				dir := t.TempDir()
				write := func(name, body string) {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				write("pyproject.toml", src.pyproject)
				if src.otherName != "" {
					write(src.otherName, src.other)
				}
				wd, _ := os.Getwd()
				if err := os.Chdir(dir); err != nil {
					t.Fatal(err)
				}
				defer os.Chdir(wd)
				io, out, errOut := term.Test()
				f := &Factory{IO: io, Getenv: func(string) string { return "" }, Version: "test"}
				args := append(append([]string{"conformance", "run", "--python", python}, src.args...), extra...)
				code := Run(f, args)
				if code != ExitUndecided {
					t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitUndecided, out, errOut)
				}
				all := out.String() + errOut.String()
				for _, name := range []string{"j.xml", "r.json", "o.txt"} {
					if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
						all += string(b)
					}
				}
				if strings.Contains(all, src.secret) {
					t.Errorf("the output holds the secret value %q:\n%s", src.secret, all)
				}
				if !strings.Contains(errOut.String(), src.key) || (src.line != "" && !strings.Contains(errOut.String(), src.line)) {
					t.Errorf("stderr does not name %q at %q:\n%s", src.key, src.line, errOut)
				}
			})
		}
	}
}
