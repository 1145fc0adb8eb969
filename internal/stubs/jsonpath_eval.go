package stubs

import (
	"maps"
	"slices"
)

// This file evaluates a compiled JSONPath expression (jsonpath.go parses it) over a decoded JSON document.

// maxWork bounds the nodes one evaluation may visit (recursive descents and filters multiply), so that a
// stub's expression over a request body always ends quickly; past it the evaluation stops where it is.
const maxWork = 200000

// evaluator carries the work budget of one evaluation.
type evaluator struct{ work int }

// eval returns every value the expression selects in doc (decoded with encoding/json into any).
func (jp *jsonPath) eval(doc any) []any {
	e := &evaluator{work: maxWork}
	return e.steps(jp.steps, []any{doc})
}

func (e *evaluator) spend(n int) bool {
	e.work -= n
	return e.work >= 0
}

func (e *evaluator) steps(steps []pathStep, cur []any) []any {
	for i, st := range steps {
		var next []any
		for _, v := range cur {
			if !e.spend(1) {
				return next
			}
			if st.kind == stepDescend {
				next = e.descendants(v, next)
			} else {
				next = e.apply(st, v, next)
			}
		}
		cur = next
		if len(cur) == 0 && i < len(steps)-1 {
			return nil
		}
	}
	return cur
}

func (e *evaluator) descendants(v any, out []any) []any {
	if !e.spend(1) {
		return out
	}
	out = append(out, v)
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			out = e.descendants(t[k], out)
		}
	case []any:
		for _, x := range t {
			out = e.descendants(x, out)
		}
	}
	return out
}

func (e *evaluator) apply(st pathStep, v any, out []any) []any {
	switch st.kind {
	case stepChild:
		if m, ok := v.(map[string]any); ok {
			for _, n := range st.names {
				if x, ok := m[n]; ok {
					out = append(out, x)
				}
			}
		}
	case stepIndex:
		if a, ok := v.([]any); ok {
			for _, i := range st.indices {
				if i < 0 {
					i += len(a)
				}
				if i >= 0 && i < len(a) {
					out = append(out, a[i])
				}
			}
		}
	case stepSlice:
		if a, ok := v.([]any); ok {
			lo, hi := 0, len(a)
			if st.hasLo {
				lo = clampIndex(st.lo, len(a))
			}
			if st.hasHi {
				hi = clampIndex(st.hi, len(a))
			}
			for i := lo; i < hi; i++ {
				out = append(out, a[i])
			}
		}
	case stepWild:
		out = append(out, children(v)...)
	case stepFilter:
		for _, c := range children(v) {
			if !e.spend(1) {
				return out
			}
			if e.holds(&st.filter, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

func clampIndex(i, n int) int {
	if i < 0 {
		i += n
	}
	return max(0, min(i, n))
}

func children(v any) []any {
	switch t := v.(type) {
	case map[string]any:
		out := make([]any, 0, len(t))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			out = append(out, t[k])
		}
		return out
	case []any:
		return t
	}
	return nil
}

func (e *evaluator) holds(f *filterExpr, item any) bool {
	switch f.op {
	case "||":
		return e.holds(f.left, item) || e.holds(f.right, item)
	case "&&":
		return e.holds(f.left, item) && e.holds(f.right, item)
	case "!":
		return !e.holds(f.left, item)
	case "":
		return len(e.values(f, item)) > 0
	}
	for _, l := range e.values(f.left, item) {
		if f.op == "=~" {
			if s, ok := l.(string); ok && f.right.re.MatchString(s) {
				return true
			}
			continue
		}
		for _, r := range e.values(f.right, item) {
			if !e.spend(1) {
				return false
			}
			if compare(f.op, l, r) {
				return true
			}
		}
	}
	return false
}

func (e *evaluator) values(f *filterExpr, item any) []any {
	if f.isPath {
		return e.steps(f.path, []any{item})
	}
	return []any{f.literal}
}

func compare(op string, l, r any) bool {
	if lf, ok := l.(float64); ok {
		if rf, ok := r.(float64); ok {
			switch op {
			case "==":
				return lf == rf
			case "!=":
				return lf != rf
			case "<":
				return lf < rf
			case "<=":
				return lf <= rf
			case ">":
				return lf > rf
			case ">=":
				return lf >= rf
			}
		}
	}
	if ls, ok := l.(string); ok {
		if rs, ok := r.(string); ok {
			switch op {
			case "<":
				return ls < rs
			case "<=":
				return ls <= rs
			case ">":
				return ls > rs
			case ">=":
				return ls >= rs
			}
		}
	}
	switch op {
	case "==":
		return jsonEqual(l, r)
	case "!=":
		return !jsonEqual(l, r)
	}
	return false
}
