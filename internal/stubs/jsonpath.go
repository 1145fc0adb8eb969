package stubs

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// jsonPath is a compiled JSONPath expression of the subset WireMock stubs use in practice: the root `$`, child
// names (`.a`, `['a']`), indices and slices (`[0]`, `[-1]`, `[1:3]`), wildcards (`.*`, `[*]`), recursive
// descent (`..a`), unions of names or indices (`['a','b']`, `[0,2]`) and filters (`[?(@.a == 'x')]`,
// `[?(@.n > 2 && @.b)]`, `[?(@.s =~ /re/)]`).
type jsonPath struct {
	src   string
	steps []pathStep
}

type stepKind int

const (
	stepChild stepKind = iota
	stepIndex
	stepSlice
	stepWild
	stepDescend
	stepFilter
)

type pathStep struct {
	kind    stepKind
	names   []string
	indices []int
	// slice bounds; hasLo/hasHi say whether each was given.
	lo, hi       int
	hasLo, hasHi bool
	filter       filterExpr
}

// maxPathLen bounds an expression so that a hostile stub file cannot make compilation expensive.
const maxPathLen = 4096

// compileJSONPath parses an expression.
func compileJSONPath(src string) (*jsonPath, error) {
	if len(src) > maxPathLen {
		return nil, fmt.Errorf("JSONPath expression is longer than %d characters", maxPathLen)
	}
	s := strings.TrimSpace(src)
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("JSONPath %q must start with $", src)
	}
	p := &pathParser{s: s, i: 1}
	steps, err := p.steps(false)
	if err != nil {
		return nil, fmt.Errorf("JSONPath %q: %w", src, err)
	}
	return &jsonPath{src: src, steps: steps}, nil
}

type pathParser struct {
	s string
	i int
}

func (p *pathParser) errf(format string, args ...any) error {
	return fmt.Errorf("at character %d: %s", p.i+1, fmt.Sprintf(format, args...))
}

// steps parses steps until the end, or, inside a filter (relative), until a character that cannot continue a
// path.
func (p *pathParser) steps(relative bool) ([]pathStep, error) {
	var out []pathStep
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '.' && p.i+1 < len(p.s) && p.s[p.i+1] == '.':
			p.i += 2
			out = append(out, pathStep{kind: stepDescend})
			if p.i < len(p.s) && p.s[p.i] == '[' {
				continue
			}
			st, err := p.dotName()
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		case c == '.':
			p.i++
			st, err := p.dotName()
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		case c == '[':
			st, err := p.bracket()
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		default:
			if relative {
				return out, nil
			}
			return nil, p.errf("unexpected %q", c)
		}
	}
	return out, nil
}

func (p *pathParser) dotName() (pathStep, error) {
	if p.i < len(p.s) && p.s[p.i] == '*' {
		p.i++
		return pathStep{kind: stepWild}, nil
	}
	start := p.i
	for p.i < len(p.s) && isNameChar(p.s[p.i]) {
		p.i++
	}
	if p.i == start {
		return pathStep{}, p.errf("a name must follow '.'")
	}
	return pathStep{kind: stepChild, names: []string{p.s[start:p.i]}}, nil
}

func isNameChar(c byte) bool {
	return c == '_' || c == '-' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func (p *pathParser) bracket() (pathStep, error) {
	p.i++ // [
	p.space()
	if p.i >= len(p.s) {
		return pathStep{}, p.errf("unclosed [")
	}
	switch c := p.s[p.i]; {
	case c == '*':
		p.i++
		return p.close(pathStep{kind: stepWild})
	case c == '?':
		p.i++
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '(' {
			return pathStep{}, p.errf("a filter is written [?(...)]")
		}
		p.i++
		f, err := p.orExpr(0)
		if err != nil {
			return pathStep{}, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return pathStep{}, p.errf("unclosed filter: expected )")
		}
		p.i++
		return p.close(pathStep{kind: stepFilter, filter: f})
	case c == '\'' || c == '"':
		var names []string
		for {
			name, err := p.quoted()
			if err != nil {
				return pathStep{}, err
			}
			names = append(names, name)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				p.space()
				continue
			}
			return p.close(pathStep{kind: stepChild, names: names})
		}
	default:
		return p.indexOrSlice()
	}
}

func (p *pathParser) indexOrSlice() (pathStep, error) {
	var idx []int
	for {
		p.space()
		n, ok := p.integer()
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ':' && len(idx) == 0 {
			st := pathStep{kind: stepSlice, lo: n, hasLo: ok}
			p.i++
			p.space()
			st.hi, st.hasHi = p.integer()
			return p.close(st)
		}
		if !ok {
			return pathStep{}, p.errf("expected an index, a quoted name, *, or a filter inside []")
		}
		idx = append(idx, n)
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		return p.close(pathStep{kind: stepIndex, indices: idx})
	}
}

func (p *pathParser) close(st pathStep) (pathStep, error) {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != ']' {
		return pathStep{}, p.errf("expected ]")
	}
	p.i++
	return st, nil
}

func (p *pathParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *pathParser) integer() (int, bool) {
	start := p.i
	if p.i < len(p.s) && p.s[p.i] == '-' {
		p.i++
	}
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' && p.i-start < 10 {
		p.i++
	}
	n, err := strconv.Atoi(p.s[start:p.i])
	if err != nil {
		p.i = start
		return 0, false
	}
	return n, true
}

func (p *pathParser) quoted() (string, error) {
	q := p.s[p.i]
	if q != '\'' && q != '"' {
		return "", p.errf("expected a quoted name")
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\' && p.i+1 < len(p.s):
			b.WriteByte(p.s[p.i+1])
			p.i += 2
		case c == q:
			p.i++
			return b.String(), nil
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", p.errf("unclosed quote")
}

// filterExpr is a node of a filter's boolean expression.
type filterExpr struct {
	op          string // "||", "&&", "!", a comparison, or "" for a bare path (existence)
	left, right *filterExpr
	path        []pathStep // for operands that are @-paths
	isPath      bool
	literal     any
	re          *regexp.Regexp
}

const maxFilterDepth = 32

func (p *pathParser) orExpr(depth int) (filterExpr, error) {
	if depth > maxFilterDepth {
		return filterExpr{}, p.errf("filter nested more than %d deep", maxFilterDepth)
	}
	left, err := p.andExpr(depth)
	if err != nil {
		return left, err
	}
	for p.space(); strings.HasPrefix(p.s[p.i:], "||"); p.space() {
		p.i += 2
		right, err := p.andExpr(depth)
		if err != nil {
			return left, err
		}
		l := left
		left = filterExpr{op: "||", left: &l, right: &right}
	}
	return left, nil
}

func (p *pathParser) andExpr(depth int) (filterExpr, error) {
	left, err := p.unary(depth)
	if err != nil {
		return left, err
	}
	for p.space(); strings.HasPrefix(p.s[p.i:], "&&"); p.space() {
		p.i += 2
		right, err := p.unary(depth)
		if err != nil {
			return left, err
		}
		l := left
		left = filterExpr{op: "&&", left: &l, right: &right}
	}
	return left, nil
}

func (p *pathParser) unary(depth int) (filterExpr, error) {
	p.space()
	if depth > maxFilterDepth {
		return filterExpr{}, p.errf("filter nested more than %d deep", maxFilterDepth)
	}
	if p.i < len(p.s) && p.s[p.i] == '!' && !strings.HasPrefix(p.s[p.i:], "!=") {
		p.i++
		inner, err := p.unary(depth + 1)
		if err != nil {
			return inner, err
		}
		return filterExpr{op: "!", left: &inner}, nil
	}
	if p.i < len(p.s) && p.s[p.i] == '(' {
		p.i++
		inner, err := p.orExpr(depth + 1)
		if err != nil {
			return inner, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return inner, p.errf("expected )")
		}
		p.i++
		return inner, nil
	}
	left, err := p.operand()
	if err != nil {
		return left, err
	}
	p.space()
	for _, op := range []string{"==", "!=", "<=", ">=", "=~", "<", ">"} {
		if strings.HasPrefix(p.s[p.i:], op) {
			p.i += len(op)
			p.space()
			right, err := p.operand()
			if err != nil {
				return left, err
			}
			if op == "=~" && right.re == nil {
				return left, p.errf("=~ needs a /regular expression/")
			}
			l := left
			return filterExpr{op: op, left: &l, right: &right}, nil
		}
	}
	if !left.isPath {
		return left, p.errf("a filter term must be an @-path or a comparison")
	}
	return left, nil
}

func (p *pathParser) operand() (filterExpr, error) {
	p.space()
	if p.i >= len(p.s) {
		return filterExpr{}, p.errf("unexpected end of filter")
	}
	switch c := p.s[p.i]; {
	case c == '@':
		p.i++
		steps, err := p.steps(true)
		if err != nil {
			return filterExpr{}, err
		}
		return filterExpr{isPath: true, path: steps}, nil
	case c == '\'' || c == '"':
		s, err := p.quoted()
		return filterExpr{literal: s}, err
	case c == '/':
		end := strings.LastIndexByte(p.s[p.i+1:], '/')
		if end < 0 {
			return filterExpr{}, p.errf("unclosed /regular expression/")
		}
		src := p.s[p.i+1 : p.i+1+end]
		p.i += end + 2
		flags := ""
		if p.i < len(p.s) && p.s[p.i] == 'i' {
			flags = "(?i)"
			p.i++
		}
		re, err := regexp.Compile(flags + src)
		if err != nil {
			return filterExpr{}, p.errf("regular expression %q: %v", src, err)
		}
		return filterExpr{re: re}, nil
	default:
		start := p.i
		for p.i < len(p.s) && strings.IndexByte(" \t)&|=!<>", p.s[p.i]) < 0 {
			p.i++
		}
		word := p.s[start:p.i]
		var v any
		if err := json.Unmarshal([]byte(word), &v); err != nil || word == "" {
			return filterExpr{}, p.errf("unknown literal %q", word)
		}
		if _, isObj := v.(map[string]any); isObj {
			return filterExpr{}, p.errf("unknown literal %q", word)
		}
		return filterExpr{literal: v}, nil
	}
}
