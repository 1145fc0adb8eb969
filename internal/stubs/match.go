package stubs

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

// MatchKind names one of WireMock's value matchers.
type MatchKind string

// The value matchers the stubs support, by their WireMock JSON keys.
const (
	MatchEqualTo        MatchKind = "equalTo"
	MatchContains       MatchKind = "contains"
	MatchDoesNotContain MatchKind = "doesNotContain"
	MatchMatches        MatchKind = "matches"
	MatchDoesNotMatch   MatchKind = "doesNotMatch"
	MatchAbsent         MatchKind = "absent"
	MatchEqualToJSON    MatchKind = "equalToJson"
	MatchJSONPath       MatchKind = "matchesJsonPath"
	MatchAnd            MatchKind = "and"
	MatchOr             MatchKind = "or"
)

// unsupportedMatchers are WireMock matchers the stubs refuse with a clear error rather than ignore.
var unsupportedMatchers = map[string]string{
	"equalToXml":        "XML bodies are not supported",
	"matchesXPath":      "XPath is not supported",
	"binaryEqualTo":     "binary bodies are not supported",
	"before":            "date matchers are not supported",
	"after":             "date matchers are not supported",
	"equalToDateTime":   "date matchers are not supported",
	"hasExactly":        "multi-value matchers are not supported",
	"includes":          "multi-value matchers are not supported",
	"matchesJsonSchema": "JSON Schema matching is not supported",
}

// Matcher is one compiled value matcher.
type Matcher struct {
	Kind MatchKind
	// Operand is the matcher's string argument (equalTo, contains, matches...).
	Operand         string
	CaseInsensitive bool
	// Absent is the value of an absent matcher (true: the value must be missing).
	Absent bool

	re                  *regexp.Regexp
	json                any
	ignoreArrayOrder    bool
	ignoreExtraElements bool
	path                *jsonPath
	sub                 *Matcher
	all                 []Matcher
}

// parseMatcher compiles a matcher from its JSON object.
func parseMatcher(raw json.RawMessage) (Matcher, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Matcher{}, fmt.Errorf("a matcher must be a JSON object such as {\"equalTo\": \"x\"}")
	}
	var m Matcher
	var kinds []string
	for k := range obj {
		if reason, bad := unsupportedMatchers[k]; bad {
			return m, fmt.Errorf("matcher %q: %s", k, reason)
		}
		switch MatchKind(k) {
		case MatchEqualTo, MatchContains, MatchDoesNotContain, MatchMatches, MatchDoesNotMatch, MatchAbsent,
			MatchEqualToJSON, MatchJSONPath, MatchAnd, MatchOr:
			kinds = append(kinds, k)
		case "caseInsensitive", "ignoreArrayOrder", "ignoreExtraElements":
		default:
			return m, fmt.Errorf("unknown matcher key %q", k)
		}
	}
	if len(kinds) != 1 {
		sort.Strings(kinds)
		return m, fmt.Errorf("a matcher needs exactly one operator, found %d (%s)", len(kinds), strings.Join(kinds, ", "))
	}
	m.Kind = MatchKind(kinds[0])
	if err := flag(obj, "caseInsensitive", &m.CaseInsensitive); err != nil {
		return m, err
	}
	if err := flag(obj, "ignoreArrayOrder", &m.ignoreArrayOrder); err != nil {
		return m, err
	}
	if err := flag(obj, "ignoreExtraElements", &m.ignoreExtraElements); err != nil {
		return m, err
	}
	arg := obj[kinds[0]]
	switch m.Kind {
	case MatchAbsent:
		if err := json.Unmarshal(arg, &m.Absent); err != nil {
			return m, fmt.Errorf("absent takes true or false")
		}
		return m, nil
	case MatchEqualToJSON:
		return m, m.compileJSON(arg)
	case MatchJSONPath:
		return m, m.compilePath(arg)
	case MatchAnd, MatchOr:
		var parts []json.RawMessage
		if err := json.Unmarshal(arg, &parts); err != nil || len(parts) == 0 {
			return m, fmt.Errorf("%s takes a non-empty array of matchers", m.Kind)
		}
		for i, p := range parts {
			sub, err := parseMatcher(p)
			if err != nil {
				return m, fmt.Errorf("%s[%d]: %w", m.Kind, i, err)
			}
			m.all = append(m.all, sub)
		}
		return m, nil
	}
	if err := json.Unmarshal(arg, &m.Operand); err != nil {
		return m, fmt.Errorf("%s takes a string", m.Kind)
	}
	if m.Kind == MatchMatches || m.Kind == MatchDoesNotMatch {
		re, err := compileFull(m.Operand, m.CaseInsensitive)
		if err != nil {
			return m, fmt.Errorf("%s: %w", m.Kind, err)
		}
		m.re = re
	}
	return m, nil
}

func flag(obj map[string]json.RawMessage, key string, dst *bool) error {
	if raw, ok := obj[key]; ok {
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("%s takes true or false", key)
		}
	}
	return nil
}

// compileFull compiles a regular expression that must match the whole value, as Java's String.matches does.
// Java-only constructs (lookarounds, backreferences, possessive quantifiers) are refused by Go's RE2 syntax.
func compileFull(src string, fold bool) (*regexp.Regexp, error) {
	prefix := ""
	if fold {
		prefix = "(?i)"
	}
	re, err := regexp.Compile(prefix + "^(?:" + src + ")$")
	if err != nil {
		return nil, fmt.Errorf("regular expression %q is not supported (RE2 syntax: no lookarounds or backreferences): %w", src, err)
	}
	return re, nil
}

func (m *Matcher) compileJSON(arg json.RawMessage) error {
	var s string
	text := []byte(arg)
	if err := json.Unmarshal(arg, &s); err == nil {
		text = []byte(s) // WireMock accepts the expected JSON as a string or inline
	}
	v, err := decodeJSON(text)
	if err != nil {
		return fmt.Errorf("equalToJson: the expected value is not JSON: %w", err)
	}
	m.json = v
	return nil
}

func (m *Matcher) compilePath(arg json.RawMessage) error {
	var expr string
	if err := json.Unmarshal(arg, &expr); err == nil {
		p, err := compileJSONPath(expr)
		m.path = p
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(arg, &obj); err != nil {
		return fmt.Errorf("matchesJsonPath takes an expression or {\"expression\": ..., <matcher>}")
	}
	if err := json.Unmarshal(obj["expression"], &expr); err != nil {
		return fmt.Errorf("matchesJsonPath needs an \"expression\" string")
	}
	p, err := compileJSONPath(expr)
	if err != nil {
		return err
	}
	m.path = p
	delete(obj, "expression")
	rest, _ := json.Marshal(obj)
	sub, err := parseMatcher(rest)
	if err != nil {
		return fmt.Errorf("matchesJsonPath %q: %w", expr, err)
	}
	m.sub = &sub
	return nil
}

// Match tells whether a value satisfies the matcher; present is false when the value is missing (a header
// or query parameter that was not sent).
func (m *Matcher) Match(value string, present bool) bool {
	switch m.Kind {
	case MatchAbsent:
		return present != m.Absent
	case MatchAnd:
		for i := range m.all {
			if !m.all[i].Match(value, present) {
				return false
			}
		}
		return true
	case MatchOr:
		for i := range m.all {
			if m.all[i].Match(value, present) {
				return true
			}
		}
		return false
	}
	if !present {
		return m.Kind == MatchDoesNotContain || m.Kind == MatchDoesNotMatch
	}
	v, op := value, m.Operand
	if m.CaseInsensitive {
		v, op = strings.ToLower(v), strings.ToLower(op)
	}
	switch m.Kind {
	case MatchEqualTo:
		return v == op
	case MatchContains:
		return strings.Contains(v, op)
	case MatchDoesNotContain:
		return !strings.Contains(v, op)
	case MatchMatches:
		return m.re.MatchString(value)
	case MatchDoesNotMatch:
		return !m.re.MatchString(value)
	case MatchEqualToJSON:
		actual, err := decodeJSON([]byte(value))
		return err == nil && m.jsonMatches(m.json, actual)
	case MatchJSONPath:
		return m.pathMatches(value)
	}
	return false
}

func (m *Matcher) pathMatches(body string) bool {
	doc, err := decodeJSON([]byte(body))
	if err != nil {
		return false
	}
	found := m.path.eval(doc)
	if m.sub == nil {
		// WireMock: a match when the expression selects a non-null value or a non-empty object or array.
		for _, v := range found {
			switch t := v.(type) {
			case nil:
			case map[string]any:
				if len(t) > 0 {
					return true
				}
			case []any:
				if len(t) > 0 {
					return true
				}
			default:
				return true
			}
		}
		return false
	}
	if len(found) == 0 {
		return m.sub.Kind == MatchAbsent && m.sub.Absent
	}
	for _, v := range found {
		if m.sub.Match(jsonText(v), true) {
			return true
		}
	}
	return false
}

// jsonText is how a selected value is handed to a sub-matcher: strings as they are, anything else as JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// maxJSONDepth bounds the nesting of any JSON the stubs decode (request bodies and stub files).
const maxJSONDepth = 256

func decodeJSON(b []byte) (any, error) {
	if d := nestingDepth(b); d > maxJSONDepth {
		return nil, fmt.Errorf("JSON nested %d deep (more than %d)", d, maxJSONDepth)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// nestingDepth is the deepest bracket nesting of a JSON text, ignoring brackets inside strings.
func nestingDepth(b []byte) int {
	depth, deepest, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// JSON unit placeholders WireMock's equalToJson understands.
const (
	placeholderIgnore  = "${json-unit.ignore}"
	placeholderAnyStr  = "${json-unit.any-string}"
	placeholderAnyNum  = "${json-unit.any-number}"
	placeholderAnyBool = "${json-unit.any-boolean}"
	placeholderRegex   = "${json-unit.regex}"
)

func (m *Matcher) jsonMatches(want, got any) bool {
	if s, ok := want.(string); ok && strings.HasPrefix(s, "${json-unit.") {
		switch {
		case s == placeholderIgnore:
			return true
		case s == placeholderAnyStr:
			_, ok := got.(string)
			return ok
		case s == placeholderAnyNum:
			_, ok := got.(float64)
			return ok
		case s == placeholderAnyBool:
			_, ok := got.(bool)
			return ok
		case strings.HasPrefix(s, placeholderRegex):
			gs, ok := got.(string)
			re, err := compileFull(strings.TrimPrefix(s, placeholderRegex), false)
			return ok && err == nil && re.MatchString(gs)
		}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || (!m.ignoreExtraElements && len(g) != len(w)) {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				if s, isStr := wv.(string); isStr && s == placeholderIgnore {
					continue
				}
				return false
			}
			if !m.jsonMatches(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) < len(w) || (!m.ignoreExtraElements && len(g) != len(w)) {
			return false
		}
		if m.ignoreArrayOrder {
			return m.unorderedMatch(w, g, make([]bool, len(g)), 0)
		}
		for i := range w {
			if !m.jsonMatches(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return jsonEqual(want, got)
}

// unorderedMatch pairs each expected element with a distinct actual one (backtracking; arrays in stubs are
// small, and the depth is bounded by the expected array's length).
func (m *Matcher) unorderedMatch(want, got []any, used []bool, i int) bool {
	if i == len(want) {
		return true
	}
	for j := range got {
		if used[j] || !m.jsonMatches(want[i], got[j]) {
			continue
		}
		used[j] = true
		if m.unorderedMatch(want, got, used, i+1) {
			return true
		}
		used[j] = false
	}
	return false
}

// jsonEqual compares decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}
