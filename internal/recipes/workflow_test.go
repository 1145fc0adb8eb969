package recipes

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const exampleWorkflow = "examples/ci/github-workflow.yml"

// workflowFile is the part of a GitHub workflow the merge test reads.
type workflowFile struct {
	Jobs map[string]struct {
		Steps []struct {
			Name string            `yaml:"name"`
			If   string            `yaml:"if"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

var hashFilesRe = regexp.MustCompile(`hashFiles\('([^']+)'\)`)

// testWorkflowMerge plays the example workflow's merge job: two exploration shards of the minimal provider
// write their JSON reports where the explore job's matrix puts them, then the merge step's script runs as a
// step without shell: runs (bash -e), and must pass, write the merged SARIF the upload step sends and render
// the merged report into the job summary.
func testWorkflowMerge(t *testing.T, bin string) {
	var wf workflowFile
	if err := yaml.Unmarshal(readRepoFile(t, exampleWorkflow), &wf); err != nil {
		t.Fatalf("%s: %v", exampleWorkflow, err)
	}
	var jsonTemplate, mergeScript, uploadIf, uploadFile string
	for _, s := range wf.Jobs["explore"].Steps {
		if remoteAction.MatchString(s.Uses) {
			jsonTemplate = s.With["json-file"]
		}
	}
	for _, s := range wf.Jobs["merge"].Steps {
		switch {
		case s.Name == "Merge the shard reports":
			mergeScript = s.Run
		case strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@"):
			uploadIf, uploadFile = s.If, s.With["sarif_file"]
		}
	}
	if !strings.Contains(jsonTemplate, "${{ matrix.shard }}") || mergeScript == "" || uploadFile == "" {
		t.Fatalf("%s: explore json-file %q, merge script %d bytes, upload of %q", exampleWorkflow, jsonTemplate, len(mergeScript), uploadFile)
	}
	if m := hashFilesRe.FindStringSubmatch(uploadIf); m == nil || m[1] != uploadFile {
		t.Errorf("the merged SARIF upload is guarded by %q but uploads %q", uploadIf, uploadFile)
	}

	ws := workspace(t)
	project := filepath.Join(ws, minimalProject)
	env := baseEnv(bin)
	for i := 1; i <= 2; i++ {
		out := filepath.Join(project, strings.ReplaceAll(jsonTemplate, "${{ matrix.shard }}", fmt.Sprint(i)))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		res := run(t, project, env, "astrabox", "conformance", "run", "--explore", "4", "--shard", fmt.Sprintf("%d/2", i), "--seed", "5", "--json", out)
		if res.code != 0 {
			t.Fatalf("shard %d/2 exit status %d\n%s", i, res.code, res.output)
		}
	}
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary.md")
	script := filepath.Join(dir, "merge.sh")
	if err := os.WriteFile(script, []byte(mergeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	// A run: step without shell: is `bash -e {0}` on Linux runners.
	res := run(t, project, append(env, "GITHUB_STEP_SUMMARY="+summary, "GITHUB_ACTIONS=true"), "bash", "--noprofile", "--norc", "-e", script)
	defer dump(t, "merge step", res)
	if res.code != 0 {
		t.Fatalf("merge step exit status %d, want 0", res.code)
	}
	mustExist(t, filepath.Join(project, uploadFile))
	merged := readJSONReport(t, filepath.Join(project, "astrabox-merged.json"))
	if len(merged.failedChecks()) != 0 {
		t.Errorf("merged report of passing shards has failures %v", merged.failedChecks())
	}
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatalf("no job summary: %v", err)
	}
	if s := string(b); !strings.Contains(s, "<pre>") || !strings.Contains(s, "PASSED") {
		t.Errorf("job summary lacks the merged text report:\n%s", s)
	}
}
