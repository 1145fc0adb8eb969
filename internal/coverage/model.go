// Package coverage is the model of what a run reached of the provider's own code: which executable lines and
// branch directions of its files ran, by callback and by scenario; how the reports of replicas, scenarios and
// shards merge; and the LCOV and Cobertura files CI tools read. The harness measures (see
// internal/harness/python/astrabox/_harness/coverage.py); this package only adds up and writes.
package coverage

import "sort"

// Mode says how coverage was measured.
type Mode string

// The measuring modes.
const (
	// ModeMonitoring is sys.monitoring (CPython 3.12+): lines and branches.
	ModeMonitoring Mode = "monitoring"
	// ModeTrace is a trace function on the provider's own frames (CPython 3.9-3.11): lines only.
	ModeTrace Mode = "trace"
	// ModeMixed is a merge of reports measured both ways (branches then count only where measured).
	ModeMixed Mode = "mixed"
	// ModeOff says coverage was not measured (Notes says why); the profile holds no file.
	ModeOff Mode = "off"
)

// KeyLoad is the callback key of what ran while the provider was imported and constructed.
const KeyLoad = "load"

// Profile is the coverage of one run (or of merged shards).
type Profile struct {
	Mode Mode `json:"mode"`
	// BranchesMeasured is true when every part of the run measured branch directions.
	BranchesMeasured bool       `json:"branches_measured"`
	Files            []File     `json:"files"`
	Callbacks        []Callback `json:"callbacks"`
	Scenarios        []Scenario `json:"scenarios,omitempty"`
	// Checks names, for each check decided over a callback, the callbacks it judges.
	Checks []CheckCallbacks `json:"checks,omitempty"`
	// Notes say what got in the way of measuring.
	Notes []string `json:"notes,omitempty"`
}

// File is one of the provider's own source files.
type File struct {
	// Path is the file as the harness measured it (absolute); writers make it relative to a source root.
	Path string `json:"path"`
	// Lines are its executable lines (from compiling it); Reached those that ran.
	Lines   []int `json:"lines"`
	Reached []int `json:"reached"`
	// Branches are its branch points, in the order the harness numbers them.
	Branches  []Branch   `json:"branches,omitempty"`
	Functions []Function `json:"functions,omitempty"`
	// Error says why the file's executable lines are unknown (Lines then lists only the reached ones).
	Error string `json:"error,omitempty"`
}

// Branch is one conditional jump of the bytecode: its line and whether each of its two directions (falling
// through, jumping) was taken.
type Branch struct {
	Line  int     `json:"line"`
	Taken [2]bool `json:"taken"`
}

// Direction names one direction of a branch point.
type Direction int

// The two directions of a branch point.
const (
	DirFallThrough Direction = 0
	DirJump        Direction = 1
)

// Function is one function of a file and the lines it spans (its first line is its `def` or decorator).
type Function struct {
	Name  string `json:"name"`
	First int    `json:"first"`
	Last  int    `json:"last"`
}

// Callback is what one callback (or KeyLoad) ran, by file, and for an implemented callback where its own
// function is and what of it never ran in the whole run.
type Callback struct {
	Name  string  `json:"name"`
	Files []Reach `json:"files"`
	// Implementation is the callback's function in the provider (nil when it keeps the default or was not
	// found among the measured files).
	Implementation *Span `json:"implementation,omitempty"`
	// Unreached are the ranges of the implementation's executable lines no callback ever ran.
	Unreached []Range `json:"unreached,omitempty"`
	// UntakenBranches are the branch directions inside the implementation never taken.
	UntakenBranches []BranchDirection `json:"untaken_branches,omitempty"`
}

// Reach is what ran of one file: lines, and branch directions as 2*index+direction.
type Reach struct {
	Path     string `json:"path"`
	Lines    []int  `json:"lines"`
	Branches []int  `json:"branches,omitempty"`
}

// Span locates a function: file, qualified name and lines.
type Span struct {
	Path     string `json:"path"`
	Function string `json:"function"`
	First    int    `json:"first"`
	Last     int    `json:"last"`
	// Lines is the number of executable lines of its body, Reached how many of them ran.
	Lines   int `json:"lines"`
	Reached int `json:"reached"`
}

// Range is a run of executable lines none of which ran (non-executable lines between them do not split it).
type Range struct {
	First int `json:"first"`
	Last  int `json:"last"`
	// After is the source of the branch line just before the range (the test that was never true, or
	// never false), when there is one.
	After     string `json:"after,omitempty"`
	AfterLine int    `json:"after_line,omitempty"`
}

// BranchDirection is one direction of one branch point never taken.
type BranchDirection struct {
	Line      int       `json:"line"`
	Direction Direction `json:"direction"`
}

// Scenario is how much one scenario reached, in all and by replica.
type Scenario struct {
	Name     string  `json:"name"`
	Lines    int     `json:"lines"`
	Branches int     `json:"branches"`
	Replicas []Count `json:"replicas,omitempty"`
}

// Count is how much one replica of a scenario reached.
type Count struct {
	Replica  string `json:"replica"`
	Lines    int    `json:"lines"`
	Branches int    `json:"branches"`
}

// CheckCallbacks names the callbacks a check judges.
type CheckCallbacks struct {
	Check     string   `json:"check"`
	Callbacks []string `json:"callbacks"`
}

// Totals are counts over a profile or a file.
type Totals struct {
	Lines, Reached          int
	Branches, BranchesTaken int
}

// Totals counts one file's executable and reached lines and branch directions.
func (f *File) Totals() Totals {
	t := Totals{Lines: len(f.Lines), Reached: len(f.Reached), Branches: 2 * len(f.Branches)}
	for _, b := range f.Branches {
		for _, x := range b.Taken {
			if x {
				t.BranchesTaken++
			}
		}
	}
	return t
}

// Totals counts the whole profile.
func (p *Profile) Totals() Totals {
	var t Totals
	for i := range p.Files {
		f := p.Files[i].Totals()
		t.Lines += f.Lines
		t.Reached += f.Reached
		t.Branches += f.Branches
		t.BranchesTaken += f.BranchesTaken
	}
	return t
}

// File returns the file with path, or nil.
func (p *Profile) File(path string) *File {
	i := sort.Search(len(p.Files), func(i int) bool { return p.Files[i].Path >= path })
	if i < len(p.Files) && p.Files[i].Path == path {
		return &p.Files[i]
	}
	return nil
}

// Callback returns the callback named name, or nil.
func (p *Profile) Callback(name string) *Callback {
	for i := range p.Callbacks {
		if p.Callbacks[i].Name == name {
			return &p.Callbacks[i]
		}
	}
	return nil
}

// CallbacksOf returns the callbacks check judges (nil when none is recorded).
func (p *Profile) CallbacksOf(check string) []string {
	for _, c := range p.Checks {
		if c.Check == check {
			return c.Callbacks
		}
	}
	return nil
}

// callbackOrder is the order of callbacks in a profile: load, the seven callbacks in the contract's order,
// then anything else by name.
var callbackOrder = map[string]int{KeyLoad: 0, "plan": 1, "synchronize": 2, "recover": 3, "prepare_session": 4,
	"prepare_turn": 5, "read_user_actions": 6, "perform_user_action": 7}

func callbackLess(a, b string) bool {
	ra, oka := callbackOrder[a]
	rb, okb := callbackOrder[b]
	switch {
	case oka && okb:
		return ra < rb
	case oka != okb:
		return oka
	}
	return a < b
}
