package coverage

import (
	"sort"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// Builder adds up coverage: the harness's reports of every call of every replica of every scenario, or whole
// profiles (merging shards). The zero value is not ready; use NewBuilder.
type Builder struct {
	modes     map[Mode]bool
	files     map[string]*fileAcc
	keys      map[string]map[string]*reachAcc // callback -> path -> what it ran
	scenarios []string
	byScen    map[string]*scenAcc
	given     map[string]Scenario // scenarios taken whole from merged profiles
	checks    map[string][]string
	notes     []string
	noted     map[string]bool
	impl      map[string]location
}

type fileAcc struct {
	static    bool
	lines     []int
	branches  []int // line of each branch point
	functions []Function
	err       string
	reached   map[int]bool
	dirs      map[int]bool
}

type reachAcc struct {
	lines map[int]bool
	dirs  map[int]bool
}

type scenAcc struct {
	all      *reachSet
	replicas map[string]*reachSet
}

// reachSet is a set of (file, line) and (file, direction) pairs.
type reachSet struct {
	lines map[string]map[int]bool
	dirs  map[string]map[int]bool
}

func newReachSet() *reachSet {
	return &reachSet{lines: map[string]map[int]bool{}, dirs: map[string]map[int]bool{}}
}

func (s *reachSet) add(m map[string]map[int]bool, path string, xs []int) {
	set := m[path]
	if set == nil {
		set = map[int]bool{}
		m[path] = set
	}
	for _, x := range xs {
		set[x] = true
	}
}

func (s *reachSet) counts() (lines, dirs int) {
	for _, m := range s.lines {
		lines += len(m)
	}
	for _, m := range s.dirs {
		dirs += len(m)
	}
	return lines, dirs
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	return &Builder{modes: map[Mode]bool{}, files: map[string]*fileAcc{}, keys: map[string]map[string]*reachAcc{},
		byScen: map[string]*scenAcc{}, given: map[string]Scenario{}, checks: map[string][]string{}, noted: map[string]bool{}}
}

func (b *Builder) file(path string) *fileAcc {
	f := b.files[path]
	if f == nil {
		f = &fileAcc{reached: map[int]bool{}, dirs: map[int]bool{}}
		b.files[path] = f
	}
	return f
}

func (b *Builder) reach(key, path string) *reachAcc {
	m := b.keys[key]
	if m == nil {
		m = map[string]*reachAcc{}
		b.keys[key] = m
	}
	r := m[path]
	if r == nil {
		r = &reachAcc{lines: map[int]bool{}, dirs: map[int]bool{}}
		m[path] = r
	}
	return r
}

// Note records a note once.
func (b *Builder) Note(text string) {
	if !b.noted[text] {
		b.noted[text] = true
		b.notes = append(b.notes, text)
	}
}

func (b *Builder) setStatic(path string, lines, branches []int, functions []Function, errText string) {
	f := b.file(path)
	if f.static {
		return
	}
	f.static = true
	f.lines = append([]int(nil), lines...)
	f.branches = append([]int(nil), branches...)
	f.functions = append([]Function(nil), functions...)
	f.err = errText
}

// Add adds one reply's coverage report, made by replica while scenario ran ("" for neither).
func (b *Builder) Add(scenario, replica string, r *harness.CoverageReport) {
	if r == nil {
		return
	}
	if r.Mode != "" {
		b.modes[Mode(r.Mode)] = true
	}
	for _, n := range r.Notes {
		b.Note(n)
	}
	for path, st := range r.Files {
		fns := make([]Function, len(st.Functions))
		for i, fn := range st.Functions {
			fns[i] = Function{Name: fn.Name, First: fn.First, Last: fn.Last}
		}
		b.setStatic(path, st.Lines, st.Branches, fns, st.Error)
	}
	var sc *scenAcc
	if scenario != "" {
		sc = b.byScen[scenario]
		if sc == nil {
			sc = &scenAcc{all: newReachSet(), replicas: map[string]*reachSet{}}
			b.byScen[scenario] = sc
			b.scenarios = append(b.scenarios, scenario)
		}
	}
	for _, h := range r.Hits {
		for path, lines := range h.Lines {
			b.addLines(h.Key, path, lines)
			if sc != nil {
				sc.all.add(sc.all.lines, path, lines)
				sc.replica(replica).add(sc.replica(replica).lines, path, lines)
			}
		}
		for path, dirs := range h.Branches {
			b.addDirs(h.Key, path, dirs)
			if sc != nil {
				sc.all.add(sc.all.dirs, path, dirs)
				sc.replica(replica).add(sc.replica(replica).dirs, path, dirs)
			}
		}
	}
}

func (s *scenAcc) replica(name string) *reachSet {
	r := s.replicas[name]
	if r == nil {
		r = newReachSet()
		s.replicas[name] = r
	}
	return r
}

func (b *Builder) addLines(key, path string, lines []int) {
	f, r := b.file(path), b.reach(key, path)
	for _, l := range lines {
		f.reached[l] = true
		r.lines[l] = true
	}
}

func (b *Builder) addDirs(key, path string, dirs []int) {
	f, r := b.file(path), b.reach(key, path)
	for _, d := range dirs {
		f.dirs[d] = true
		r.dirs[d] = true
	}
}

// SetChecks records which callbacks each check judges.
func (b *Builder) SetChecks(m map[string][]string) {
	for k, v := range m {
		b.checks[k] = append([]string(nil), v...)
	}
}

// Profile returns what was added, in a stable order.
func (b *Builder) Profile() *Profile {
	p := &Profile{Notes: append([]string(nil), b.notes...)}
	switch {
	case b.modes[ModeMixed] || (b.modes[ModeMonitoring] && b.modes[ModeTrace]):
		p.Mode = ModeMixed
	case b.modes[ModeMonitoring]:
		p.Mode, p.BranchesMeasured = ModeMonitoring, true
	case b.modes[ModeTrace]:
		p.Mode = ModeTrace
	case b.modes[ModeOff]:
		p.Mode = ModeOff
	}
	paths := make([]string, 0, len(b.files))
	for path := range b.files {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		p.Files = append(p.Files, b.files[path].file(path))
	}
	keys := make([]string, 0, len(b.keys))
	for k := range b.keys {
		keys = append(keys, k)
	}
	for _, k := range keys {
		cb := Callback{Name: k}
		files := make([]string, 0, len(b.keys[k]))
		for path := range b.keys[k] {
			files = append(files, path)
		}
		sort.Strings(files)
		for _, path := range files {
			r := b.keys[k][path]
			cb.Files = append(cb.Files, Reach{Path: path, Lines: sortedKeys(r.lines), Branches: sortedKeys(r.dirs)})
		}
		p.Callbacks = append(p.Callbacks, cb)
	}
	sortCallbacks(p.Callbacks)
	b.describe(p)
	p.Scenarios = b.scenarioCounts()
	checks := make([]string, 0, len(b.checks))
	for c := range b.checks {
		checks = append(checks, c)
	}
	sort.Strings(checks)
	for _, c := range checks {
		p.Checks = append(p.Checks, CheckCallbacks{Check: c, Callbacks: b.checks[c]})
	}
	return p
}

func sortCallbacks(cbs []Callback) {
	sort.SliceStable(cbs, func(i, j int) bool { return callbackLess(cbs[i].Name, cbs[j].Name) })
}

func (f *fileAcc) file(path string) File {
	out := File{Path: path, Lines: f.lines, Functions: f.functions, Error: f.err}
	if !f.static {
		out.Error = "the harness sent no executable lines for this file"
	}
	exec := setOf(f.lines)
	for l := range f.reached {
		if !exec[l] {
			exec[l] = true // a line the compile did not list (a changed file): still reported as reached
		}
	}
	out.Lines = sortedKeys(exec)
	out.Reached = sortedKeys(f.reached)
	for i, line := range f.branches {
		out.Branches = append(out.Branches, Branch{Line: line, Taken: [2]bool{f.dirs[2*i], f.dirs[2*i+1]}})
	}
	return out
}

func (b *Builder) scenarioCounts() []Scenario {
	var out []Scenario
	for _, name := range b.scenarios {
		if s, ok := b.given[name]; ok {
			out = append(out, s)
			continue
		}
		sc := b.byScen[name]
		s := Scenario{Name: name}
		s.Lines, s.Branches = sc.all.counts()
		reps := make([]string, 0, len(sc.replicas))
		for r := range sc.replicas {
			reps = append(reps, r)
		}
		sort.Strings(reps)
		for _, r := range reps {
			c := Count{Replica: r}
			c.Lines, c.Branches = sc.replicas[r].counts()
			s.Replicas = append(s.Replicas, c)
		}
		out = append(out, s)
	}
	return out
}
