package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// troubleshootingSources are the directories (relative to the repository root) whose user-facing error messages
// must be explained in docs/troubleshooting.md. Files are only parsed, never built, so a package that does not
// exist yet is simply skipped.
var troubleshootingSources = []string{
	"internal/cli",
	"internal/conformance",
	"internal/discovery",
	"internal/explore",
	"internal/harness", // only errors.go is read, for the ProcessError summaries
	"internal/report",  // report merge and report rendering reach the user too
	"internal/scaffold",
	"internal/seconds",  // the one duration rule: its messages reach the user through settings and scenarios
	"internal/services", // [tool.astrabox.services] declarations: their messages reach the user as settings errors
	"internal/simulate",
	"internal/wrapper",
}

// tsErrorHelpers are the functions whose format argument becomes an error message, with the index of that
// argument when their declaration does not tell (see tsFormatIndex). fmt.Errorf and errors.New are handled
// by name and package.
var tsErrorHelpers = map[string]int{
	"usagef": 0, // internal/cli: a usage error, exit 2
	"bad":    1, // a settings or services error for one key: bad(key, format, ...) or bad(format, ...)
	"errAt":  1, // internal/simulate/scenario.go: a ScenarioError at a line
}

// tsMessageFields are the fields of error structs (types whose name ends in "Error") that hold the message text.
var tsMessageFields = map[string]bool{"Message": true, "Msg": true, "Reason": true, "Rule": true}

// troubleshootingExclusions are fragments that can never reach a user as an error message, or that are only the
// wrapping prefix of a message documented elsewhere. Each needs a reason; the test fails when an exclusion no
// longer matches anything, so the list cannot rot.
var troubleshootingExclusions = map[string]string{
	"read embedded suite:":      "the default suite is compiled into the binary; only a broken build fails to read it",
	"embedded suite:":           "the default suite is compiled into the binary and checked by the conformance tests",
	"read embedded template":    "astrabox init templates are compiled into the binary",
	"parse template":            "astrabox init templates are compiled into the binary and parsed by the scaffold tests",
	"render template":           "astrabox init templates are compiled into the binary and rendered by the scaffold tests",
	"encode scenario:":          "YAML encoding of the kit's own Scenario struct cannot fail for any value the kit builds",
	"unknown sandbox operation": "the embedded harness only sends the operations the simulator knows (protocol.md)",
	"render text: no report":    "renderers are only called with the report the command just built or read",
	"render json: no report":    "renderers are only called with the report the command just built or read",
	"render junit: no report":   "renderers are only called with the report the command just built or read",
	"render sarif: no report":   "renderers are only called with the report the command just built or read",
	"render github: no report":  "renderers are only called with the report the command just built or read",
	"render gitlab: no report":  "renderers are only called with the report the command just built or read",
	"render concise: no report": "renderers are only called with the report the command just built or read",
	": the double's address":    "the kit passes its own double's URL; a malformed one is a bug in the kit",
}

// tsMinFragment is the shortest fragment checked: shorter ones ("read %s: %w" -> "read") say nothing on their own.
const tsMinFragment = 12

// tsMessage is one constant fragment of an error message and where it is written.
type tsMessage struct {
	text  string
	where string
}

// TestTroubleshootingCoversEveryErrorMessage fails when an error message the kit can print is missing from
// docs/troubleshooting.md. Add the message (its literal text up to the first formatting verb, as a code span)
// under the section for its package, with what it means and what to do.
func TestTroubleshootingCoversEveryErrorMessage(t *testing.T) {
	doc, err := os.ReadFile(repoPath("docs/troubleshooting.md"))
	if err != nil {
		t.Fatalf("docs/troubleshooting.md: %v", err)
	}
	page := tsNormalize(string(doc))
	msgs := tsCollectMessages(t)
	if len(msgs) < 50 {
		t.Fatalf("found only %d error messages in the sources; the extractor is broken", len(msgs))
	}
	used := map[string]bool{}
	missing := 0
	for _, m := range msgs {
		if _, ok := troubleshootingExclusions[m.text]; ok {
			used[m.text] = true
			continue
		}
		if !strings.Contains(page, tsNormalize(m.text)) {
			missing++
			t.Errorf("%s: error message %q is not in docs/troubleshooting.md", m.where, m.text)
		}
	}
	for frag := range troubleshootingExclusions {
		if !used[frag] {
			t.Errorf("exclusion %q matches no error message any more; remove it", frag)
		}
	}
	if missing > 0 {
		t.Logf("%d of %d messages undocumented: add each as a code span to docs/troubleshooting.md", missing, len(msgs))
	}
}

// TestTroubleshootingFragments checks the fragment rule the coverage test relies on.
func TestTroubleshootingFragments(t *testing.T) {
	cases := map[string]string{
		"read scenario: %w":                       "read scenario:",
		"no provider %q here":                     "no provider",
		"%s already exists; not overwriting it":   "already exists; not overwriting it",
		"%d%% of %s done, nothing %v left to say": "done, nothing",
		"cannot parse %-10s line %[2]d":           "cannot parse",
		"plain text only":                         "plain text only",
	}
	for in, want := range cases {
		if got := tsLeadingFragment(in); got != want {
			t.Errorf("tsLeadingFragment(%q) = %q, want %q", in, got, want)
		}
	}
}

var tsVerbRE = regexp.MustCompile(`%[-+# 0]*(\[\d+\])?(\d+|\*)?(\.(\d+|\*)?)?[a-zA-Z%]`)

// tsLeadingFragment returns the constant text of a format before its first verb, trimmed. When that is too short
// to identify the message ("%s already exists"), it returns the longest constant run between verbs instead.
func tsLeadingFragment(format string) string {
	parts := tsVerbRE.Split(format, -1)
	lead := strings.TrimSpace(parts[0])
	if len(lead) >= tsMinFragment {
		return lead
	}
	best := lead
	for _, p := range parts[1:] {
		if p = strings.TrimSpace(p); len(p) > len(best) {
			best = p
		}
	}
	return best
}

var tsSpaceRE = regexp.MustCompile(`\s+`)

func tsNormalize(s string) string { return tsSpaceRE.ReplaceAllString(strings.TrimSpace(s), " ") }

// tsCollectMessages parses the sources and returns every error message fragment, sorted and deduplicated.
func tsCollectMessages(t *testing.T) []tsMessage {
	t.Helper()
	fset := token.NewFileSet()
	seen := map[string]bool{}
	var out []tsMessage
	add := func(lit ast.Expr, pos token.Pos) {
		s, ok := tsConstantPrefix(lit)
		if !ok {
			return
		}
		frag := tsLeadingFragment(s)
		if len(frag) < tsMinFragment && troubleshootingExclusions[frag] == "" {
			return
		}
		if seen[frag] {
			return
		}
		seen[frag] = true
		p := fset.Position(pos)
		rel, _ := filepath.Rel(repoPath("."), p.Filename)
		out = append(out, tsMessage{text: frag, where: rel + ":" + strconv.Itoa(p.Line)})
	}
	for _, dir := range troubleshootingSources {
		files, _ := filepath.Glob(filepath.Join(repoPath(dir), "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			if dir == "internal/harness" && filepath.Base(path) != "errors.go" {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			tsScanFile(f, add)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
}

// tsScanFile passes every message expression of one parsed file to add.
func tsScanFile(f *ast.File, add func(ast.Expr, token.Pos)) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Body != nil {
				tsInspectFunc(d, add)
			}
		case *ast.GenDecl: // package-level sentinels such as var ErrX = errors.New("...")
			tsInspectNode(d, false, false, false, add)
		}
	}
}

// TestTroubleshootingExtractor runs the extractor over a made-up source with one message of every kind it
// must find, and some text it must not take for a message, so that a new message in any of these shapes
// makes the coverage test fail until it is documented.
func TestTroubleshootingExtractor(t *testing.T) {
	const src = `package x

var ErrGone = errors.New("the sentinel error message")

type BadError struct{ Msg string }

func (e *BadError) Error() string { return fmt.Sprintf("%s: written by an Error method", e.Msg) }

func f() error {
	if a {
		return fmt.Errorf("wrapped failure message: %w", err)
	}
	if b {
		return usagef("a usage message for the flag %q", x)
	}
	if c {
		return &BadError{Msg: "a struct literal message"}
	}
	if d {
		return &SettingsError{Key: k, Msg: fmt.Sprintf("a formatted struct message %d", n)}
	}
	msg := "a message built in a variable"
	run := func() error {
		msg := "a message inside a closure"
		return errors.New(msg)
	}
	fmt.Println("printed text that is no error message")
	_ = Event{Message: "a timeline event, not an error"}
	return errAt(3, "step " + name + " is concatenated with a name")
}

func parseKey(v any, bad func(string, ...any)) {
	bad("a key parser's message, format first: %v", v)
}

func settings() {
	bad := func(key, format string, args ...any) {}
	bad("some-key", "a settings message after its key")
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	tsScanFile(f, func(e ast.Expr, _ token.Pos) {
		if s, ok := tsConstantPrefix(e); ok {
			if frag := tsLeadingFragment(s); len(frag) >= tsMinFragment {
				got[frag] = true
			}
		}
	})
	want := []string{
		"the sentinel error message",
		": written by an Error method",
		"wrapped failure message:",
		"a usage message for the flag",
		"a struct literal message",
		"a formatted struct message",
		"a message built in a variable",
		"a message inside a closure",
		"is concatenated with a name",
		"a key parser's message, format first:",
		"a settings message after its key",
	}
	for _, w := range want {
		if !got[strings.TrimSpace(w)] {
			t.Errorf("the extractor missed %q; found %v", w, got)
		}
		delete(got, strings.TrimSpace(w))
	}
	for extra := range got {
		t.Errorf("the extractor took %q for an error message", extra)
	}
}

// tsInspectFunc finds the messages in one function: error constructors, error struct literals, the text written
// by an error type's Error method, ProcessError summaries, and msg variables in functions that return an error.
func tsInspectFunc(fn *ast.FuncDecl, add func(ast.Expr, token.Pos)) {
	errorMethod := fn.Name.Name == "Error" && fn.Recv != nil && strings.HasSuffix(tsRecvType(fn), "Error")
	summary := fn.Name.Name == "summary" && tsRecvType(fn) == "ProcessError"
	tsInspectNode(fn.Body, errorMethod, summary, tsReturnsError(fn.Type), add)
}

// tsReturnsError reports whether a function type has an error among its results.
func tsReturnsError(ft *ast.FuncType) bool {
	if ft.Results == nil {
		return false
	}
	for _, r := range ft.Results.List {
		if id, ok := r.Type.(*ast.Ident); ok && id.Name == "error" {
			return true
		}
	}
	return false
}

// tsInspectNode walks one function body or declaration; the flags say what kind of function it belongs to.
func tsInspectNode(node ast.Node, errorMethod, summary, inErrorFunc bool, add func(ast.Expr, token.Pos)) {
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit: // a closure such as a cobra RunE: its own msg variables count when it returns an error
			tsInspectNode(n.Body, false, false, tsReturnsError(n.Type), add)
			return false
		case *ast.CallExpr:
			name, pkg := tsCallName(n)
			switch {
			case pkg == "fmt" && name == "Errorf", pkg == "errors" && name == "New":
				add(tsArg(n, 0), n.Pos())
			case pkg == "" && tsHasHelper(name):
				add(tsArg(n, tsFormatIndex(n, tsErrorHelpers[name])), n.Pos())
			case errorMethod && (name == "Sprintf" || name == "Fprintf" || name == "WriteString"):
				idx := 0
				if name == "Fprintf" {
					idx = 1
				}
				add(tsArg(n, idx), n.Pos())
			}
		case *ast.CompositeLit:
			if !strings.HasSuffix(tsTypeName(n.Type), "Error") {
				return true
			}
			for _, el := range n.Elts {
				kv, ok := el.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if k, ok := kv.Key.(*ast.Ident); ok && tsMessageFields[k.Name] {
					add(kv.Value, kv.Pos())
				}
			}
		case *ast.ReturnStmt:
			if summary {
				for _, r := range n.Results {
					add(r, n.Pos())
				}
			}
		case *ast.AssignStmt:
			if !inErrorFunc {
				return true
			}
			for i, lhs := range n.Lhs {
				if tsIsMsgTarget(lhs) && i < len(n.Rhs) {
					add(n.Rhs[i], n.Pos())
				}
			}
		}
		return true
	})
}

func tsHasHelper(name string) bool { _, ok := tsErrorHelpers[name]; return ok }

// tsFormatIndex returns the index of a helper call's format argument from the helper's own declaration when
// the parser resolved it (a parameter such as `bad func(string, ...any)` or a closure such as
// `bad := func(key, format string, args ...any)`): the last parameter before the variadic one. Otherwise it
// returns def.
func tsFormatIndex(c *ast.CallExpr, def int) int {
	id, ok := c.Fun.(*ast.Ident)
	if !ok || id.Obj == nil { //nolint:staticcheck // the parser's object resolution is all a parse-only test has
		return def
	}
	var ft *ast.FuncType
	switch d := id.Obj.Decl.(type) { //nolint:staticcheck // as above
	case *ast.Field:
		ft, _ = d.Type.(*ast.FuncType)
	case *ast.AssignStmt:
		for i, lhs := range d.Lhs {
			if l, ok := lhs.(*ast.Ident); ok && l.Name == id.Name && i < len(d.Rhs) {
				if fl, ok := d.Rhs[i].(*ast.FuncLit); ok {
					ft = fl.Type
				}
			}
		}
	}
	if ft == nil || ft.Params == nil {
		return def
	}
	fixed := 0
	for _, f := range ft.Params.List {
		if _, variadic := f.Type.(*ast.Ellipsis); variadic {
			break
		}
		fixed += max(1, len(f.Names))
	}
	if fixed == 0 {
		return def
	}
	return fixed - 1
}

// tsIsMsgTarget reports whether an assignment target is a message variable or field (msg, x.Msg, x.Message).
func tsIsMsgTarget(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "msg"
	case *ast.SelectorExpr:
		return tsMessageFields[e.Sel.Name]
	}
	return false
}

// tsConstantPrefix returns the constant text an expression starts with: a string literal, the format of a
// fmt.Sprintf call, or the left-most literal of a concatenation.
func tsConstantPrefix(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		// A concatenation reads as a format with a verb for every operand that is not a literal, so that
		// "sandbox " + id + " no longer exists" yields the same fragments as "sandbox %v no longer exists".
		if e.Op != token.ADD {
			return "", false
		}
		left, lok := tsConstantPrefix(e.X)
		right, rok := tsConstantPrefix(e.Y)
		if !lok && !rok {
			return "", false
		}
		if !lok {
			left = "%v"
		}
		if !rok {
			right = "%v"
		}
		return left + right, true
	case *ast.CallExpr:
		if name, pkg := tsCallName(e); pkg == "fmt" && name == "Sprintf" {
			return tsConstantPrefix(tsArg(e, 0))
		}
	case *ast.ParenExpr:
		return tsConstantPrefix(e.X)
	}
	return "", false
}

func tsCallName(c *ast.CallExpr) (name, pkg string) {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name, ""
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return f.Sel.Name, x.Name
		}
		return f.Sel.Name, "?"
	}
	return "", "?"
}

func tsArg(c *ast.CallExpr, i int) ast.Expr {
	if i < len(c.Args) {
		return c.Args[i]
	}
	return nil
}

func tsRecvType(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return ""
	}
	return tsTypeName(fn.Recv.List[0].Type)
}

func tsTypeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return tsTypeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.UnaryExpr:
		return tsTypeName(e.X)
	}
	return ""
}
