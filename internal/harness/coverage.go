package harness

import (
	"encoding/json"
	"fmt"
)

// CoverageOptions is the `coverage` argument of load: whether the harness measures which lines and branches
// of the provider's own files run, and which of those files count (globs relative to the project root).
type CoverageOptions struct {
	Enabled bool     `json:"enabled"`
	Include []string `json:"include,omitempty"`
	Omit    []string `json:"omit,omitempty"`
}

// Coverage measurement modes reported by the harness.
const (
	// CoverageMonitoring is sys.monitoring (CPython 3.12+): lines and branches.
	CoverageMonitoring = "monitoring"
	// CoverageTrace is a trace function on the provider's own frames (CPython 3.9-3.11): lines only.
	CoverageTrace = "trace"
)

// CoverageReport is the `coverage` field of a callback's reply: the provider files measured for the first
// time in this process, and what each key (a callback name, or "load") ran since the previous reply.
type CoverageReport struct {
	Mode string `json:"mode"`
	// Branches is true when branch points were measured (sys.monitoring).
	Branches bool                    `json:"branches"`
	Files    map[string]CoverageFile `json:"files"`
	Hits     []CoverageHits          `json:"hits"`
	// Notes say what got in the way of measuring (the provider's own trace function, no free tool id, ...).
	Notes []string `json:"notes,omitempty"`
}

// CoverageFile is the static facts of one measured file, from compiling it: its executable lines, the line
// of each branch point (by index; each has two directions), and its functions.
type CoverageFile struct {
	Lines     []int              `json:"lines"`
	Branches  []int              `json:"branches"`
	Functions []CoverageFunction `json:"functions"`
	// Error says why the file could not be compiled again (its lines are then unknown).
	Error string `json:"error,omitempty"`
}

// CoverageFunction is one function (or class body, lambda, comprehension) of a file and the lines it spans.
type CoverageFunction struct {
	Name        string
	First, Last int
}

// UnmarshalJSON reads the wire form [qualname, first line, last line].
func (f *CoverageFunction) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("decode coverage function: %w", err)
	}
	if len(raw) != 3 {
		return fmt.Errorf("decode coverage function: want [name, first, last], got %d items", len(raw))
	}
	if err := json.Unmarshal(raw[0], &f.Name); err != nil {
		return fmt.Errorf("decode coverage function name: %w", err)
	}
	if err := json.Unmarshal(raw[1], &f.First); err != nil {
		return fmt.Errorf("decode coverage function first line: %w", err)
	}
	if err := json.Unmarshal(raw[2], &f.Last); err != nil {
		return fmt.Errorf("decode coverage function last line: %w", err)
	}
	return nil
}

// MarshalJSON writes the wire form.
func (f CoverageFunction) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{f.Name, f.First, f.Last})
}

// CoverageHits is what one key ran: lines by file, and branch directions by file (2*index for the branch
// point's fall-through, 2*index+1 for its jump).
type CoverageHits struct {
	Key      string           `json:"key"`
	Lines    map[string][]int `json:"lines"`
	Branches map[string][]int `json:"branches"`
}
