package recipes

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const actionFile = "action.yml"

// actionMeta is the action's metadata; decoding refuses unknown keys, so a misspelt key fails the test.
type actionMeta struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Author      string `yaml:"author"`
	Branding    struct {
		Icon  string `yaml:"icon"`
		Color string `yaml:"color"`
	} `yaml:"branding"`
	Inputs map[string]struct {
		Description        string  `yaml:"description"`
		Required           bool    `yaml:"required"`
		Default            *string `yaml:"default"`
		DeprecationMessage string  `yaml:"deprecationMessage"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

// actionStep is one step of a composite action, with exactly the keys GitHub accepts there.
type actionStep struct {
	Name             string            `yaml:"name"`
	ID               string            `yaml:"id"`
	If               string            `yaml:"if"`
	Run              string            `yaml:"run"`
	Shell            string            `yaml:"shell"`
	Uses             string            `yaml:"uses"`
	With             map[string]string `yaml:"with"`
	Env              map[string]string `yaml:"env"`
	WorkingDirectory string            `yaml:"working-directory"`
	ContinueOnError  string            `yaml:"continue-on-error"`
}

func readAction(t testing.TB) actionMeta {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(string(readRepoFile(t, actionFile))))
	dec.KnownFields(true)
	var a actionMeta
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("%s: %v", actionFile, err)
	}
	return a
}

var (
	exprRe       = regexp.MustCompile(`\$\{\{(.*?)\}\}`)
	inputRefRe   = regexp.MustCompile(`\binputs\.([A-Za-z0-9_-]+)`)
	stepRefRe    = regexp.MustCompile(`\bsteps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)`)
	outputLineRe = regexp.MustCompile(`echo "([a-z0-9-]+)=`)
	usesRe       = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@v[0-9]+(\.[0-9]+)*$`)
)

// expressions returns every expression of a step (if, env, with), whether or not it is wrapped in ${{ }}.
func (s actionStep) expressions() []string {
	out := []string{s.If}
	for _, m := range [2]map[string]string{s.Env, s.With} {
		for _, v := range m {
			for _, e := range exprRe.FindAllStringSubmatch(v, -1) {
				out = append(out, e[1])
			}
		}
	}
	return out
}

// TestActionMetadata checks what actionlint does not: the action's own metadata. GitHub accepts a composite
// action only with runs.using composite and a shell on every run step; beyond that, every input the steps
// read is declared and every declared input is read, steps only read outputs of earlier steps that write
// them, and run scripts take inputs through env (never ${{ }} in the script, which would let an input inject
// shell).
func TestActionMetadata(t *testing.T) {
	a := readAction(t)
	if a.Name == "" || a.Description == "" {
		t.Errorf("the action needs a name and a description")
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q, want composite", a.Runs.Using)
	}
	for name, in := range a.Inputs {
		if in.Description == "" {
			t.Errorf("input %s has no description", name)
		}
		if !in.Required && in.Default == nil {
			t.Errorf("optional input %s has no default", name)
		}
	}
	read := map[string]bool{}
	written := map[string]map[string]bool{} // step id -> outputs it writes
	ids := map[string]bool{}
	for i, s := range a.Runs.Steps {
		where := fmt.Sprintf("step %d (%s)", i+1, s.Name)
		if s.Name == "" {
			t.Errorf("%s has no name", where)
		}
		if (s.Run == "") == (s.Uses == "") {
			t.Errorf("%s must have exactly one of run and uses", where)
		}
		if s.Run != "" {
			switch s.Shell {
			case "bash", "sh", "python", "pwsh":
			case "":
				t.Errorf("%s runs a script without shell, which GitHub refuses in a composite action", where)
			default:
				t.Errorf("%s: unexpected shell %q", where, s.Shell)
			}
			if strings.Contains(s.Run, "${{") {
				t.Errorf("%s interpolates ${{ }} into its script; pass the value through env", where)
			}
		}
		if s.Uses != "" {
			if s.Shell != "" {
				t.Errorf("%s: shell on a uses step", where)
			}
			if !usesRe.MatchString(s.Uses) {
				t.Errorf("%s: uses %q is not pinned to a major version", where, s.Uses)
			}
		}
		for _, e := range s.expressions() {
			for _, m := range inputRefRe.FindAllStringSubmatch(e, -1) {
				read[m[1]] = true
				if _, ok := a.Inputs[m[1]]; !ok {
					t.Errorf("%s reads inputs.%s, which is not declared", where, m[1])
				}
			}
			for _, m := range stepRefRe.FindAllStringSubmatch(e, -1) {
				if !written[m[1]][m[2]] {
					t.Errorf("%s reads steps.%s.outputs.%s, which no earlier step writes", where, m[1], m[2])
				}
			}
		}
		if s.ID != "" {
			if ids[s.ID] {
				t.Errorf("%s: duplicate id %s", where, s.ID)
			}
			ids[s.ID] = true
			written[s.ID] = map[string]bool{}
			for _, m := range outputLineRe.FindAllStringSubmatch(s.Run, -1) {
				written[s.ID][m[1]] = true
			}
		}
	}
	for name := range a.Inputs {
		if !read[name] {
			t.Errorf("input %s is declared but no step reads it", name)
		}
	}
	if len(a.Outputs) == 0 {
		t.Errorf("the action defines no outputs")
	}
	for name, o := range a.Outputs {
		if o.Description == "" {
			t.Errorf("output %s has no description", name)
		}
		m := stepRefRe.FindStringSubmatch(o.Value)
		if m == nil || !written[m[1]][m[2]] {
			t.Errorf("output %s = %q does not name an output a step writes", name, o.Value)
		}
	}
	shellcheckScripts(t, a)
	var upload *actionStep
	for i := range a.Runs.Steps {
		if strings.HasPrefix(a.Runs.Steps[i].Uses, "github/codeql-action/upload-sarif@") {
			upload = &a.Runs.Steps[i]
		}
	}
	if upload == nil || !strings.Contains(upload.If, "always()") {
		t.Errorf("the SARIF upload must run with always(), so a failing suite still reaches code scanning")
	}
}

// shellcheckScripts runs shellcheck, when the machine has it, over every bash script of the action and the
// GitLab job (actionlint does the same for workflows), refusing warnings and errors.
func shellcheckScripts(t *testing.T, a actionMeta) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Log("shellcheck is not on PATH; the action's scripts are not shellchecked")
		return
	}
	scripts := map[string]string{}
	for _, s := range a.Runs.Steps {
		if s.Run != "" && s.Shell == "bash" {
			scripts["action step "+s.Name] = s.Run
		}
	}
	job := readGitLab(t).Jobs["astrabox-conformance"]
	// ASTRABOX_ARGS is split on whitespace on purpose.
	scripts["GitLab job"] = "# shellcheck disable=SC2086\n" + strings.Join(append(append([]string{}, job.BeforeScript...), job.Script...), "\n")
	for name, body := range scripts {
		cmd := exec.Command(sc, "--shell=bash", "--severity=warning", "-")
		cmd.Stdin = strings.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("shellcheck %s: %v\n%s", name, err, out)
		}
	}
}

// actionRun is the state of one simulated run of the composite action.
type actionRun struct {
	t        *testing.T
	meta     actionMeta
	inputs   map[string]string
	ws       string
	temp     string
	env      []string
	outputs  map[string]map[string]string // step id -> outputs
	outcome  map[string]string            // step id -> success, failure or skipped
	failed   bool
	ran      []string                     // names of the steps that ran
	uses     map[string]map[string]string // uses -> evaluated with
	logs     strings.Builder
	addPaths []string
}

func (r *actionRun) lookup(path []string) (string, error) {
	switch {
	case len(path) == 2 && path[0] == "inputs":
		in, ok := r.meta.Inputs[path[1]]
		if !ok {
			return "", fmt.Errorf("undeclared input")
		}
		if v, ok := r.inputs[path[1]]; ok {
			return v, nil
		}
		if in.Default != nil {
			return *in.Default, nil
		}
		return "", nil
	case len(path) == 4 && path[0] == "steps" && path[2] == "outputs":
		return r.outputs[path[1]][path[3]], nil
	case len(path) == 3 && path[0] == "steps" && (path[2] == "outcome" || path[2] == "conclusion"):
		return r.outcome[path[1]], nil
	case len(path) == 2 && path[0] == "github" && path[1] == "action_path":
		return repoRoot(r.t), nil
	case len(path) == 2 && path[0] == "github" && path[1] == "workspace":
		return r.ws, nil
	case len(path) == 2 && path[0] == "runner" && path[1] == "temp":
		return r.temp, nil
	case len(path) == 2 && path[0] == "runner" && path[1] == "os":
		return "Linux", nil
	}
	return "", fmt.Errorf("context not supported by the test runner")
}

// parseOutputFile reads a GITHUB_OUTPUT file: name=value lines and name<<DELIM heredocs.
func parseOutputFile(path string) (map[string]string, error) {
	out := map[string]string{}
	fh, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return out, nil
		}
		return nil, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var val []string
			for sc.Scan() && sc.Text() != delim {
				val = append(val, sc.Text())
			}
			out[name] = strings.Join(val, "\n")
			continue
		}
		if name, val, ok := strings.Cut(line, "="); ok {
			out[name] = val
		} else if line != "" {
			return nil, fmt.Errorf("%s: malformed line %q", path, line)
		}
	}
	return out, sc.Err()
}

// execute plays the composite action's steps as the runner would: conditions, env, outputs, GITHUB_PATH.
// run steps are executed with bash; uses steps are recorded with their evaluated inputs (setup-go is the Go
// of this machine, the SARIF upload is checked by the caller).
func (r *actionRun) execute() {
	t := r.t
	ctx := &exprContext{lookup: r.lookup}
	for i, s := range r.meta.Runs.Steps {
		ctx.failed = r.failed
		ok, err := evalIf(s.If, ctx)
		if err != nil {
			t.Fatalf("step %d (%s): if: %v", i+1, s.Name, err)
		}
		if !ok {
			if s.ID != "" {
				r.outcome[s.ID] = "skipped"
			}
			continue
		}
		r.ran = append(r.ran, s.Name)
		if s.Uses != "" {
			with := map[string]string{}
			for k, v := range s.With {
				if with[k], err = interpolate(v, ctx); err != nil {
					t.Fatalf("step %d (%s): with.%s: %v", i+1, s.Name, k, err)
				}
			}
			r.uses[strings.SplitN(s.Uses, "@", 2)[0]] = with
			if s.ID != "" {
				r.outcome[s.ID] = "success"
			}
			continue
		}
		if s.Shell != "bash" {
			t.Fatalf("step %d (%s): the test runner only runs bash steps, not %q", i+1, s.Name, s.Shell)
		}
		dir := t.TempDir()
		outFile := filepath.Join(dir, "output")
		pathFile := filepath.Join(dir, "path")
		script := filepath.Join(dir, "step.sh")
		if err := os.WriteFile(script, []byte(s.Run), 0o644); err != nil {
			t.Fatal(err)
		}
		env := append(baseEnv(r.addPaths...), r.env...)
		env = append(env, "GITHUB_OUTPUT="+outFile, "GITHUB_PATH="+pathFile)
		for k, v := range s.Env {
			val, err := interpolate(v, ctx)
			if err != nil {
				t.Fatalf("step %d (%s): env.%s: %v", i+1, s.Name, k, err)
			}
			env = append(env, k+"="+val)
		}
		wd := r.ws
		if s.WorkingDirectory != "" {
			wd = filepath.Join(r.ws, s.WorkingDirectory)
		}
		// shell: bash is `bash --noprofile --norc -eo pipefail {0}` on GitHub's runners.
		res := run(t, wd, env, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		fmt.Fprintf(&r.logs, "=== %s (exit %d)\n%s", s.Name, res.code, res.output)
		outs, err := parseOutputFile(outFile)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i+1, s.Name, err)
		}
		if b, err := os.ReadFile(pathFile); err == nil {
			for _, p := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if p != "" {
					r.addPaths = append([]string{p}, r.addPaths...)
				}
			}
		}
		if s.ID != "" {
			r.outputs[s.ID] = outs
			r.outcome[s.ID] = "success"
		}
		if res.code != 0 {
			r.failed = true
			if s.ID != "" {
				r.outcome[s.ID] = "failure"
			}
		}
	}
}

// actionOutputs evaluates the action's outputs after a run.
func (r *actionRun) actionOutputs() map[string]string {
	ctx := &exprContext{lookup: r.lookup, failed: r.failed}
	out := map[string]string{}
	for name, o := range r.meta.Outputs {
		v, err := interpolate(o.Value, ctx)
		if err != nil {
			r.t.Fatalf("output %s: %v", name, err)
		}
		out[name] = v
	}
	return out
}

// startAction runs the action with the given inputs in a scratch workspace and returns the run and the path
// of its job summary; the steps' logs are printed when the test fails.
func startAction(t *testing.T, inputs map[string]string) (*actionRun, string) {
	ws := workspace(t)
	temp := t.TempDir()
	summary := filepath.Join(temp, "step-summary.md")
	r := &actionRun{
		t: t, meta: readAction(t), ws: ws, temp: temp, inputs: inputs,
		outputs: map[string]map[string]string{}, outcome: map[string]string{}, uses: map[string]map[string]string{},
		env: []string{
			"CI=true", "GITHUB_ACTIONS=true", "GITHUB_WORKSPACE=" + ws, "RUNNER_TEMP=" + temp, "RUNNER_OS=Linux",
			"RUNNER_ARCH=" + map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH],
			"GITHUB_STEP_SUMMARY=" + summary, "GITHUB_ACTION_PATH=" + repoRoot(t),
		},
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("steps ran: %v\n%s", r.ran, r.logs.String())
		}
	})
	r.execute()
	return r, summary
}

// testActionUndecided runs the action on a directory without a provider: the kit exits 2, the action fails,
// nothing is uploaded and the summary says the kit could not decide.
func testActionUndecided(t *testing.T) {
	r, summary := startAction(t, map[string]string{"project": "no/such/project"})
	outs := r.actionOutputs()
	if outs["exit-code"] != "2" || outs["result"] != "undecided" || !r.failed {
		t.Fatalf("exit-code %q, result %q, action failed %v; want 2, undecided, true", outs["exit-code"], outs["result"], r.failed)
	}
	if outs["json-file"] != "" || outs["sarif-file"] != "" {
		t.Errorf("report outputs without a report: %v", outs)
	}
	if _, ok := r.uses["github/codeql-action/upload-sarif"]; ok {
		t.Errorf("SARIF upload ran without a SARIF file")
	}
	if !strings.Contains(r.logs.String(), "::error title=astrabox::") {
		t.Errorf("no error annotation for the undecided run")
	}
	b, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(b), "could not decide (exit 2)") {
		t.Errorf("job summary %q (%v) does not say the kit could not decide", b, err)
	}
}

// testAction runs the action against the provider at project in a scratch workspace with the inputs a
// workflow would give, then checks the step outcomes, the reports, the path rewriting for code scanning and
// annotations, and the job summary.
func testAction(t *testing.T, project string, wantCode int) {
	// The seed and interpreter inputs must reach the kit: a seed other than the default, and python3 by name.
	r, summary := startAction(t, map[string]string{"project": project, "sarif-file": "reports/astrabox.sarif", "seed": "3", "python": "python3"})
	ws, temp := r.ws, r.temp
	outs := r.actionOutputs()
	if outs["exit-code"] != fmt.Sprint(wantCode) {
		t.Fatalf("exit-code output %q, want %d", outs["exit-code"], wantCode)
	}
	if r.failed != (wantCode != 0) {
		t.Errorf("the action failed = %v with exit code %d; it must fail exactly when the suite does not pass", r.failed, wantCode)
	}
	wantResult := map[int]string{0: "passed", 1: "failed"}[wantCode]
	if outs["result"] != wantResult {
		t.Errorf("result output %q, want %q", outs["result"], wantResult)
	}
	bin := outs["astrabox"]
	if bin != filepath.Join(temp, "astrabox-bin", "astrabox") || !contains(r.addPaths, filepath.Dir(bin)) {
		t.Errorf("astrabox was installed at %q and PATH gained %v", bin, r.addPaths)
	}
	mustExist(t, bin)

	// The reports exist where the outputs say, and parse.
	for _, k := range []string{"json-file", "junit-file", "sarif-file"} {
		if outs[k] == "" {
			t.Fatalf("output %s is empty", k)
		}
		mustExist(t, filepath.Join(ws, outs[k]))
	}
	rep := readJSONReport(t, filepath.Join(ws, outs["json-file"]))
	if rep.Seed != 3 || filepath.Base(rep.Provider.Python) != "python3" {
		t.Errorf("the report has seed %d and interpreter %q; the inputs gave 3 and python3", rep.Seed, rep.Provider.Python)
	}
	junit := readJUnit(t, filepath.Join(ws, outs["junit-file"]))
	if junit.Failures != len(rep.failedChecks()) {
		t.Errorf("JUnit has %d failures, the JSON report %v", junit.Failures, rep.failedChecks())
	}

	// SARIF went to code scanning even when the suite failed, from the file the suite wrote.
	up, ok := r.uses["github/codeql-action/upload-sarif"]
	if !ok {
		t.Fatalf("the SARIF upload did not run; steps ran: %v", r.ran)
	}
	if up["sarif_file"] != outs["sarif-file"] || up["category"] != "astrabox" {
		t.Errorf("upload-sarif with %v, want sarif_file %s and category astrabox", up, outs["sarif-file"])
	}
	var sarif struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					Physical struct {
						Artifact struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	b, err := os.ReadFile(filepath.Join(ws, up["sarif_file"]))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sarif); err != nil || sarif.Version != "2.1.0" || len(sarif.Runs) != 1 {
		t.Fatalf("SARIF: version %q, %d runs, %v", sarif.Version, len(sarif.Runs), err)
	}
	// Every location resolves against the repository root, as code scanning resolves it.
	var rules []string
	for _, res := range sarif.Runs[0].Results {
		rules = append(rules, res.RuleID)
		for _, l := range res.Locations {
			mustExist(t, filepath.Join(ws, filepath.FromSlash(l.Physical.Artifact.URI)))
		}
	}
	sort.Strings(rules)
	summaryText, err := os.ReadFile(summary)
	if err != nil {
		t.Fatalf("no job summary: %v", err)
	}
	if wantCode == 0 {
		if len(rules) != 0 || !strings.Contains(string(summaryText), "astrabox conformance: passed") {
			t.Errorf("passing run: SARIF results %v, summary:\n%s", rules, summaryText)
		}
		return
	}
	if !contains(rules, "LEAK-LOG") {
		t.Fatalf("SARIF results %v lack LEAK-LOG", rules)
	}
	var leakLine int
	for _, res := range rep.Results {
		if res.Check == "LEAK-LOG" && res.Location != nil {
			leakLine = res.Location.Line
		}
	}
	wantURI := project + "/broken_leak_log.py"
	for _, res := range sarif.Runs[0].Results {
		if res.RuleID == "LEAK-LOG" && (len(res.Locations) == 0 || res.Locations[0].Physical.Artifact.URI != wantURI ||
			res.Locations[0].Physical.Region.StartLine != leakLine) {
			t.Errorf("LEAK-LOG SARIF location %+v, want %s:%d", res.Locations, wantURI, leakLine)
		}
	}
	// The annotation lands on the same file, so it shows in the pull request's diff.
	if want := fmt.Sprintf("::error file=%s,line=%d,title=LEAK-LOG::", wantURI, leakLine); !strings.Contains(r.logs.String(), want) {
		t.Errorf("no annotation %q in the log", want)
	}
	where := fmt.Sprintf("| %s:%d |", wantURI, leakLine)
	for _, want := range []string{"astrabox conformance: failed", "| failed | `LEAK-LOG` |", where, "<details>"} {
		if !strings.Contains(string(summaryText), want) {
			t.Errorf("job summary lacks %q:\n%s", want, summaryText)
		}
	}
}
