package coverage

import (
	"os"
	"strings"
)

// location is where the provider defines a callback: its file and a line of its `def` (or decorator).
type location struct {
	path string
	line int
}

// Implement records that the provider implements callback in path at line (its definition), so that the
// profile says what of that function never ran.
func (b *Builder) Implement(callback, path string, line int) {
	if b.impl == nil {
		b.impl = map[string]location{}
	}
	b.impl[callback] = location{path: path, line: line}
}

// describe fills in each implemented callback's span, unreached ranges and untaken branch directions.
func (b *Builder) describe(p *Profile) {
	sources := map[string][]string{}
	source := func(path string) []string {
		if s, ok := sources[path]; ok {
			return s
		}
		var lines []string
		if data, err := os.ReadFile(path); err == nil {
			lines = strings.Split(string(data), "\n")
		}
		sources[path] = lines
		return lines
	}
	for name, loc := range b.impl {
		f := p.File(loc.path)
		if f == nil {
			continue
		}
		fn := enclosing(f.Functions, name, loc.line)
		if fn == nil {
			continue
		}
		cb := p.Callback(name)
		if cb == nil {
			p.Callbacks = append(p.Callbacks, Callback{Name: name})
			sortCallbacks(p.Callbacks)
			cb = p.Callback(name)
		}
		var body []int
		for _, l := range f.Lines {
			if l > fn.First && l <= fn.Last {
				body = append(body, l)
			}
		}
		reached := setOf(f.Reached)
		span := &Span{Path: f.Path, Function: fn.Name, First: fn.First, Last: fn.Last, Lines: len(body)}
		for _, l := range body {
			if reached[l] {
				span.Reached++
			}
		}
		cb.Implementation = span
		cb.Unreached = unreachedRanges(body, reached)
		branchLine := map[int]bool{}
		for _, br := range f.Branches {
			if br.Line <= fn.First || br.Line > fn.Last {
				continue
			}
			branchLine[br.Line] = true
			for d, taken := range br.Taken {
				if !taken {
					cb.UntakenBranches = append(cb.UntakenBranches, BranchDirection{Line: br.Line, Direction: Direction(d)})
				}
			}
		}
		src := source(f.Path)
		for i := range cb.Unreached {
			r := &cb.Unreached[i]
			prev := 0
			for _, l := range body {
				if l < r.First {
					prev = l
				}
			}
			if prev > 0 && branchLine[prev] && prev <= len(src) {
				r.After, r.AfterLine = strings.TrimSpace(src[prev-1]), prev
			}
		}
	}
}

// enclosing returns the innermost function named name (or ending in "."+name) whose lines hold line.
func enclosing(fns []Function, name string, line int) *Function {
	var best *Function
	for i := range fns {
		fn := &fns[i]
		if fn.Name != name && !strings.HasSuffix(fn.Name, "."+name) {
			continue
		}
		if line < fn.First || line > fn.Last {
			continue
		}
		if best == nil || fn.Last-fn.First < best.Last-best.First {
			best = fn
		}
	}
	return best
}
