// Package scaffold writes a new runtime preparation provider project that passes the astrabox conformance
// suite as it stands: a pyproject.toml with the provider entry point and a commented [tool.astrabox]
// table, a src-layout package whose callbacks are stubbed to the platform's defaults, unittest tests and a
// GitHub Actions workflow. The files are text/template templates embedded in the binary.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
)

//go:embed templates/*.tmpl
var templatesFS embed.FS

// EntryPointGroup is the entry-point group the platform reads providers from.
const EntryPointGroup = "astrabox.providers.runtime_preparation"

// Options say what to scaffold and where.
type Options struct {
	// Dir is the project directory; it is created when missing.
	Dir string
	// Name is the provider name; "" derives it from Dir's base name with SanitizeName.
	Name string
	// Package is the Python package under src/; "" derives it from the name with PackageFor.
	Package string
	// KitVersion is the astrabox version that writes the project; a release tag pins the workflow's action.
	KitVersion string
	// KitCommit is the commit the astrabox binary was built from; it pins the workflow's action when the
	// version is not a release. Without either, the workflow uses main.
	KitCommit string
	// Force overwrites files that already exist.
	Force bool
}

// Result says what was written.
type Result struct {
	// Dir is the absolute project directory.
	Dir string
	// Name, Package and Class are the provider name, its Python package and its class.
	Name, Package, Class string
	// Files are the paths written, relative to Dir, slash-separated, in writing order.
	Files []string
	// Overwritten are the entries of Files that existed before (only with Force).
	Overwritten []string
	// Workflow is the absolute path of the GitHub workflow written: in the repository root's
	// .github/workflows, where GitHub reads it, even when Dir is a subdirectory of a git repository.
	Workflow string
	// RepoRoot is the git repository holding Dir ("" when there is none).
	RepoRoot string
	// GitignoreAppended says .gitignore existed and got the .astrabox/ line appended.
	GitignoreAppended bool
	// FloatingPin says the workflow's action follows the main branch: this astrabox has neither a release
	// version nor the commit it was built from (a build outside a git checkout), so there was nothing fixed
	// to pin. The workflow says so too; the author should pin a release tag or commit.
	FloatingPin bool
}

// ExistsError is returned when a file the scaffold would write already exists and Force is off. Nothing
// has been written when it is returned.
type ExistsError struct {
	// Paths are the existing files, as given to the user (Dir joined with the relative path).
	Paths []string
}

func (e *ExistsError) Error() string {
	if len(e.Paths) == 1 {
		return fmt.Sprintf("%s already exists; not overwriting it (use --force to replace it)", e.Paths[0])
	}
	return fmt.Sprintf("%d files already exist; not overwriting them (use --force to replace them):\n  %s",
		len(e.Paths), strings.Join(e.Paths, "\n  "))
}

// InvalidError is returned for a provider name or package name that cannot be used.
type InvalidError struct {
	What, Value, Rule, Suggestion string
}

func (e *InvalidError) Error() string {
	msg := fmt.Sprintf("%s %q is not valid: %s", e.What, e.Value, e.Rule)
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; try %q", e.Suggestion)
	}
	return msg
}

var (
	providerNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	identifierRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	bareKeyRE      = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	nameRunRE      = regexp.MustCompile(`[^a-z0-9._-]+`)
	separatorsRE   = regexp.MustCompile(`[._-]+`)
)

// pythonKeywords are the names a package may not take.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

// reservedPackages would shadow a module the project itself needs.
var reservedPackages = map[string]bool{"astrabox": true, "tests": true, "test": true, "unittest": true}

// ValidName reports whether name is a valid provider name: [a-z0-9][a-z0-9._-]{0,62}.
func ValidName(name string) bool { return providerNameRE.MatchString(name) }

// SanitizeName turns any text (typically a directory name) into a valid provider name: lower case, runs of
// other characters become "-", leading and trailing separators dropped, at most 63 characters. Text with
// nothing usable gives "provider".
func SanitizeName(s string) string {
	s = nameRunRE.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.TrimLeft(s, "._-")
	if len(s) > 63 {
		s = s[:63]
	}
	s = strings.TrimRight(s, "._-")
	if s == "" {
		return "provider"
	}
	return s
}

// ValidPackage reports whether pkg can be the project's Python package: an identifier, not a keyword, and
// not a name that would shadow astrabox, the tests package or the standard library's test modules.
func ValidPackage(pkg string) bool {
	return identifierRE.MatchString(pkg) && !pythonKeywords[pkg] && !reservedPackages[pkg]
}

// PackageFor derives a Python package name from a valid provider name: separators become "_" and the
// suffix "_provider" is added unless the name already ends in "provider".
func PackageFor(name string) string {
	pkg := separatorsRE.ReplaceAllString(name, "_")
	pkg = strings.Trim(pkg, "_")
	if pkg == "" {
		return "provider"
	}
	if pkg[0] >= '0' && pkg[0] <= '9' {
		pkg = "p" + pkg
	}
	if !strings.HasSuffix(pkg, "provider") {
		pkg += "_provider"
	}
	return pkg
}

// ClassFor derives the provider class name from a valid provider name: "my-tools" gives
// "MyToolsProvider".
func ClassFor(name string) string {
	var b strings.Builder
	for _, part := range separatorsRE.Split(name, -1) {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	class := b.String()
	if !strings.HasSuffix(class, "Provider") {
		class += "Provider"
	}
	if class[0] >= '0' && class[0] <= '9' {
		class = "Provider" + class
	}
	return class
}

// file is one output: the template and where it goes (a template itself, for the package directory).
type file struct {
	template string
	path     string
}

var files = []file{
	{"pyproject.toml.tmpl", "pyproject.toml"},
	{"README.md.tmpl", "README.md"},
	{"init.py.tmpl", "src/{{.Package}}/__init__.py"},
	{"provider.py.tmpl", "src/{{.Package}}/provider.py"},
	{"tests_init.py.tmpl", "tests/__init__.py"},
	{"test_provider.py.tmpl", "tests/test_provider.py"},
	{"astrabox.yml.tmpl", "{{.WorkflowPath}}"},
	{"gitignore.tmpl", gitignore},
}

// gitignore is the one file the scaffold merges into instead of refusing: the .astrabox/ line is appended
// to an existing .gitignore that lacks it.
const gitignore = ".gitignore"

// data is what the templates see.
type data struct {
	Name, Package, Class, EntryKey, KitRef string
	// FloatingPin: KitRef is a branch, not a release or a commit (see Result.FloatingPin).
	FloatingPin bool
	// Release: KitRef is a version (v...), given to the action as its version so that it downloads that
	// release rather than building the kit.
	Release bool
	// ProjectRel is the project directory relative to the repository root ("." when it is the root);
	// WorkflowPath is where the workflow goes, relative to the project directory.
	ProjectRel, WorkflowPath string
}

// Resolve fills in the derived fields of o (name, package) and validates them, without touching the disk.
func Resolve(o Options) (Options, error) {
	if o.Dir == "" {
		o.Dir = "."
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return o, fmt.Errorf("resolve %s: %w", o.Dir, err)
	}
	o.Dir = abs
	if o.Name == "" {
		o.Name = SanitizeName(filepath.Base(abs))
	} else if !ValidName(o.Name) {
		return o, &InvalidError{What: "provider name", Value: o.Name,
			Rule: "use 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", Suggestion: SanitizeName(o.Name)}
	}
	if o.Package == "" {
		o.Package = PackageFor(o.Name)
	} else if !ValidPackage(o.Package) {
		sug := PackageFor(SanitizeName(o.Package))
		return o, &InvalidError{What: "package name", Value: o.Package,
			Rule: "use a Python identifier that is not a keyword, astrabox, test, tests or unittest", Suggestion: sug}
	}
	return o, nil
}

// Render returns the project's files, relative slash path to content, in writing order, without touching
// the disk. o must come from Resolve.
func Render(o Options) ([]string, map[string][]byte, error) {
	d := data{Name: o.Name, Package: o.Package, Class: ClassFor(o.Name), EntryKey: o.Name, KitRef: kitRef(o.KitVersion, o.KitCommit)}
	d.FloatingPin = d.KitRef == floatingRef
	d.Release = strings.HasPrefix(d.KitRef, "v")
	d.ProjectRel, d.WorkflowPath = workflowPlace(o.Dir, o.Name)
	if !bareKeyRE.MatchString(d.EntryKey) {
		d.EntryKey = `"` + d.EntryKey + `"`
	}
	var order []string
	out := map[string][]byte{}
	for _, f := range files {
		path, err := execute(f.path, f.path, d)
		if err != nil {
			return nil, nil, err
		}
		text, err := templatesFS.ReadFile("templates/" + f.template)
		if err != nil {
			return nil, nil, fmt.Errorf("read embedded template %s: %w", f.template, err)
		}
		content, err := execute(f.template, string(text), d)
		if err != nil {
			return nil, nil, err
		}
		order = append(order, path)
		out[path] = []byte(content)
	}
	return order, out, nil
}

func execute(name, text string, d data) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("parse template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return "", fmt.Errorf("render template %s: %w", name, err)
	}
	return buf.String(), nil
}

// kitRef is the ref the workflow pins the action to: the release tag of this astrabox, else the commit it
// was built from, else main.
func kitRef(version, commit string) string {
	if strings.HasPrefix(version, "v") && !strings.Contains(version, "devel") && !strings.Contains(version, "+dirty") {
		return version
	}
	if commitRE.MatchString(commit) {
		return commit
	}
	return floatingRef
}

// floatingRef is the pin of a workflow written by an astrabox with no version and no commit.
const floatingRef = "main"

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// RepoRoot returns the git repository holding dir (the nearest ancestor, dir included, with a .git entry),
// or "" when there is none. dir need not exist yet.
func RepoRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// workflowPlace says where the workflow goes: GitHub reads workflows only from the repository root's
// .github/workflows, so in a subdirectory of a git repository it goes there, named after the provider, with
// the project's path relative to the root; otherwise in the project.
func workflowPlace(dir, name string) (projectRel, workflowPath string) {
	root := RepoRoot(dir)
	if root == "" || root == dir {
		return ".", ".github/workflows/astrabox.yml"
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return ".", ".github/workflows/astrabox.yml"
	}
	back, _ := filepath.Rel(dir, filepath.Join(root, ".github", "workflows", "astrabox-"+name+".yml"))
	return filepath.ToSlash(rel), filepath.ToSlash(back)
}

// Write scaffolds the project described by o. Without Force it first checks every file and writes
// nothing when any exists (an *ExistsError naming them).
func Write(o Options) (*Result, error) {
	o, err := Resolve(o)
	if err != nil {
		return nil, err
	}
	order, contents, err := Render(o)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: o.Dir, Name: o.Name, Package: o.Package, Class: ClassFor(o.Name), RepoRoot: RepoRoot(o.Dir),
		FloatingPin: kitRef(o.KitVersion, o.KitCommit) == floatingRef}
	if st, err := os.Stat(o.Dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s is a file, not a directory; give a directory to scaffold into", o.Dir)
	}
	var existing []string
	for _, rel := range order {
		p := filepath.Join(o.Dir, filepath.FromSlash(rel))
		if rel == gitignore {
			continue
		}
		st, err := os.Lstat(p)
		switch {
		case err == nil && st.IsDir():
			return nil, fmt.Errorf("%s is a directory; move it away to scaffold here", p)
		case err == nil:
			existing = append(existing, p)
			res.Overwritten = append(res.Overwritten, rel)
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("check %s: %w", p, err)
		}
	}
	if len(existing) > 0 && !o.Force {
		return nil, &ExistsError{Paths: existing}
	}
	for _, rel := range order {
		p := filepath.Join(o.Dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return res, fmt.Errorf("create %s: %w", filepath.Dir(p), err)
		}
		content := contents[rel]
		if rel == gitignore {
			merged, appended, keep, err := mergeGitignore(p, content)
			if err != nil {
				return res, err
			}
			if keep {
				continue
			}
			content, res.GitignoreAppended = merged, appended
		}
		if err := writeFile(p, content); err != nil {
			return res, err
		}
		if strings.HasSuffix(rel, ".yml") && strings.Contains(rel, ".github/workflows/") {
			res.Workflow = filepath.Clean(p)
		}
		res.Files = append(res.Files, rel)
	}
	return res, nil
}

// mergeGitignore returns the .gitignore to write: ours when there is none, the existing one with our lines
// appended when it lacks .astrabox/, or keep=true when it already ignores it.
func mergeGitignore(p string, ours []byte) (content []byte, appended, keep bool, err error) {
	old, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return ours, false, false, nil
	}
	if err != nil {
		return nil, false, false, fmt.Errorf("read %s: %w", p, err)
	}
	for _, line := range strings.Split(string(old), "\n") {
		if t := strings.TrimSpace(line); t == ".astrabox/" || t == ".astrabox" || t == "/.astrabox/" || t == "/.astrabox" {
			return nil, false, true, nil
		}
	}
	merged := string(old)
	if merged != "" && !strings.HasSuffix(merged, "\n") {
		merged += "\n"
	}
	return []byte(merged + "\n" + string(ours)), true, false, nil
}

// writeFile replaces p with content through a temporary file in the same directory, so an interrupted
// run never leaves a half-written file. An existing symbolic link is replaced, not followed.
func writeFile(p string, content []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".astrabox-init-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
