package recipes

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
)

// This file holds a small evaluator of GitHub Actions expressions: just the subset action.yml uses (context
// paths, string literals, ==, !=, !, &&, || and the status functions). Anything else is an error, so the
// action cannot grow an expression the tests would silently misread.

// exprContext resolves context paths such as inputs.project or steps.suite.outputs.exit-code.
type exprContext struct {
	lookup func(path []string) (string, error)
	failed bool // a previous step failed: success() is false, failure() true
}

// value is an expression value: a string or a boolean.
type value struct {
	s      string
	b      bool
	isBool bool
}

func (v value) truthy() bool {
	if v.isBool {
		return v.b
	}
	return v.s != ""
}

func (v value) String() string {
	if v.isBool {
		if v.b {
			return "true"
		}
		return "false"
	}
	return v.s
}

type exprParser struct {
	src  string
	toks []string
	pos  int
	ctx  *exprContext
}

// tokenize splits an expression into tokens: operators, parentheses, quoted strings and identifiers/paths.
func tokenize(src string) ([]string, error) {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case strings.HasPrefix(src[i:], "==") || strings.HasPrefix(src[i:], "!=") ||
			strings.HasPrefix(src[i:], "&&") || strings.HasPrefix(src[i:], "||"):
			toks = append(toks, src[i:i+2])
			i += 2
		case c == '!' || c == '(' || c == ')':
			toks = append(toks, string(c))
			i++
		case c == '\'':
			j := i + 1
			var b strings.Builder
			for ; j < len(src); j++ {
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' { // '' is an escaped quote
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, fmt.Errorf("unterminated string in %q", src)
			}
			toks = append(toks, "'"+b.String())
			i = j + 1
		case c == '_' || c == '-' || c == '.' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)):
			j := i
			for j < len(src) && (src[j] == '_' || src[j] == '-' || src[j] == '.' ||
				unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j]))) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		default:
			return nil, fmt.Errorf("unsupported character %q in expression %q", c, src)
		}
	}
	return toks, nil
}

// evalExpr evaluates one expression (without the ${{ }} wrapper).
func evalExpr(src string, ctx *exprContext) (value, error) {
	toks, err := tokenize(src)
	if err != nil {
		return value{}, err
	}
	p := &exprParser{src: src, toks: toks, ctx: ctx}
	v, err := p.or()
	if err != nil {
		return value{}, err
	}
	if p.pos != len(p.toks) {
		return value{}, fmt.Errorf("unexpected %q in expression %q", p.toks[p.pos], src)
	}
	return v, nil
}

func (p *exprParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *exprParser) or() (value, error) {
	l, err := p.and()
	if err != nil {
		return value{}, err
	}
	for p.peek() == "||" {
		p.pos++
		r, err := p.and()
		if err != nil {
			return value{}, err
		}
		if !l.truthy() {
			l = r
		}
	}
	return l, nil
}

func (p *exprParser) and() (value, error) {
	l, err := p.cmp()
	if err != nil {
		return value{}, err
	}
	for p.peek() == "&&" {
		p.pos++
		r, err := p.cmp()
		if err != nil {
			return value{}, err
		}
		if l.truthy() {
			l = r
		}
	}
	return l, nil
}

func (p *exprParser) cmp() (value, error) {
	l, err := p.unary()
	if err != nil {
		return value{}, err
	}
	if op := p.peek(); op == "==" || op == "!=" {
		p.pos++
		r, err := p.unary()
		if err != nil {
			return value{}, err
		}
		// GitHub compares strings case-insensitively; booleans compare as their string forms here, which is
		// enough for the subset in use.
		eq := strings.EqualFold(l.String(), r.String())
		return value{b: eq == (op == "=="), isBool: true}, nil
	}
	return l, nil
}

func (p *exprParser) unary() (value, error) {
	if p.peek() == "!" {
		p.pos++
		v, err := p.unary()
		if err != nil {
			return value{}, err
		}
		return value{b: !v.truthy(), isBool: true}, nil
	}
	return p.primary()
}

func (p *exprParser) primary() (value, error) {
	t := p.peek()
	if t == "" {
		return value{}, fmt.Errorf("expression %q ends too early", p.src)
	}
	p.pos++
	switch {
	case t == "(":
		v, err := p.or()
		if err != nil {
			return value{}, err
		}
		if p.peek() != ")" {
			return value{}, fmt.Errorf("missing ) in expression %q", p.src)
		}
		p.pos++
		return v, nil
	case strings.HasPrefix(t, "'"):
		return value{s: t[1:]}, nil
	case t == "true" || t == "false":
		return value{b: t == "true", isBool: true}, nil
	case p.peek() == "(":
		p.pos++
		if p.peek() != ")" {
			return value{}, fmt.Errorf("function %s with arguments is not supported in %q", t, p.src)
		}
		p.pos++
		switch t {
		case "always":
			return value{b: true, isBool: true}, nil
		case "success":
			return value{b: !p.ctx.failed, isBool: true}, nil
		case "failure":
			return value{b: p.ctx.failed, isBool: true}, nil
		case "cancelled":
			return value{b: false, isBool: true}, nil
		}
		return value{}, fmt.Errorf("unsupported function %s() in %q", t, p.src)
	case strings.Contains(t, "."):
		s, err := p.ctx.lookup(strings.Split(t, "."))
		if err != nil {
			return value{}, fmt.Errorf("%s in %q: %w", t, p.src, err)
		}
		return value{s: s}, nil
	}
	return value{}, fmt.Errorf("unsupported token %q in expression %q", t, p.src)
}

// interpolate replaces every ${{ expr }} in s by its value.
func interpolate(s string, ctx *exprContext) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return "", fmt.Errorf("unterminated ${{ in %q", s)
		}
		v, err := evalExpr(strings.TrimSpace(s[i+3:i+j]), ctx)
		if err != nil {
			return "", err
		}
		b.WriteString(s[:i])
		b.WriteString(v.String())
		s = s[i+j+2:]
	}
}

// evalIf decides a step's if: condition the way the runner does: empty means success(), and a condition
// without a status function is implicitly ANDed with success().
func evalIf(cond string, ctx *exprContext) (bool, error) {
	cond = strings.TrimSpace(cond)
	if strings.HasPrefix(cond, "${{") && strings.HasSuffix(cond, "}}") {
		cond = strings.TrimSpace(cond[3 : len(cond)-2])
	}
	if cond == "" {
		return !ctx.failed, nil
	}
	v, err := evalExpr(cond, ctx)
	if err != nil {
		return false, err
	}
	hasStatus := false
	for _, f := range []string{"always()", "success()", "failure()", "cancelled()"} {
		if strings.Contains(strings.ReplaceAll(cond, " ", ""), f) {
			hasStatus = true
		}
	}
	if !hasStatus && ctx.failed {
		return false, nil
	}
	return v.truthy(), nil
}

func TestExpressionSubset(t *testing.T) {
	ctx := &exprContext{lookup: func(path []string) (string, error) {
		switch strings.Join(path, ".") {
		case "inputs.flag":
			return "true", nil
		case "inputs.empty":
			return "", nil
		case "steps.a.outputs.code":
			return "1", nil
		}
		return "", fmt.Errorf("unknown context")
	}}
	cases := []struct {
		cond   string
		failed bool
		want   bool
	}{
		{"", false, true},
		{"", true, false},
		{"inputs.flag == 'true'", false, true},
		{"inputs.flag == 'TRUE'", false, true},
		{"inputs.flag != 'true'", false, false},
		{"inputs.flag == 'true'", true, false},
		{"always() && inputs.flag == 'true'", true, true},
		{"always() && inputs.empty != ''", true, false},
		{"failure()", true, true},
		{"success() || steps.a.outputs.code == '1'", false, true},
		{"!(inputs.empty == '') || false", false, false},
		{"${{ always() }}", true, true},
	}
	for _, c := range cases {
		ctx.failed = c.failed
		got, err := evalIf(c.cond, ctx)
		if err != nil {
			t.Errorf("evalIf(%q): %v", c.cond, err)
			continue
		}
		if got != c.want {
			t.Errorf("evalIf(%q) with failed=%v = %v, want %v", c.cond, c.failed, got, c.want)
		}
	}
	for _, bad := range []string{"contains(inputs.flag, 'x')", "inputs.nope == 'x'", "inputs.flag ==", "'open"} {
		if _, err := evalIf(bad, ctx); err == nil {
			t.Errorf("evalIf(%q) = nil error, want one", bad)
		}
	}
	got, err := interpolate("a ${{ steps.a.outputs.code }} b ${{ inputs.flag }}", ctx)
	if err != nil || got != "a 1 b true" {
		t.Errorf("interpolate = %q, %v", got, err)
	}
}
