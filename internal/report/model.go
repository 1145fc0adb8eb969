// Package report holds the conformance report model and renders it in every output format the kit offers:
// the terminal, JSON (astrabox.conformance/v1), JUnit XML, SARIF 2.1.0 and GitHub workflow annotations.
package report

// Schema is the identifier of the JSON report format documented in docs/report-format.md.
const Schema = "astrabox.conformance/v1"

// Status is the outcome of one check.
type Status string

// The outcomes of a check.
const (
	StatusPassed  Status = "passed"
	StatusFailed  Status = "failed"
	StatusWarning Status = "warning"
	StatusSkipped Status = "skipped"
	StatusFlaky   Status = "flaky"
	// StatusNotApplicable means the provider keeps the platform's default for everything the check judges
	// (it does not implement the callback or path), so there is nothing of its own to judge.
	StatusNotApplicable Status = "not_applicable"
	// StatusNotExercised means the provider implements what the check judges but no scenario of the run
	// reached it: the kit could not decide. A run with such a result never prints PASSED and exits 2 unless
	// the check is skipped with a reason.
	StatusNotExercised Status = "not_exercised"
)

// Severity says how much a failed check matters.
type Severity string

// The severities of checks.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityNote    Severity = "note"
)

// Report is one conformance run: which provider, which seed, and one result per check.
type Report struct {
	Schema   string   `json:"schema"`
	Tool     Tool     `json:"tool"`
	Provider Provider `json:"provider"`
	Seed     int64    `json:"seed"`
	Summary  Summary  `json:"summary"`
	Results  []Result `json:"results"`
	// Scenarios lists the scenarios that ran, in order, by name.
	Scenarios []string `json:"scenarios,omitempty"`

	Coverage *Coverage `json:"coverage,omitempty"` // what ran of the provider's own code (coverage.go)
}

// Tool names the kit that wrote the report.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Provider identifies the provider under test.
type Provider struct {
	Name         string `json:"name"`
	EntryPoint   string `json:"entry_point"`
	Target       string `json:"target"`
	Source       string `json:"source"`
	Project      string `json:"project"`
	Python       string `json:"python"`
	PythonPath   string `json:"python_path"`
	SessionBound bool   `json:"session_bound"`
}

// Summary counts the results by status.
type Summary struct {
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Warning int `json:"warning"`
	Skipped int `json:"skipped"`
	Flaky   int `json:"flaky"`
	// NotApplicable and NotExercised count the results with those statuses.
	NotApplicable int `json:"not_applicable"`
	NotExercised  int `json:"not_exercised"`
}

// Result is the outcome of one check over the recorded histories.
type Result struct {
	Check    string     `json:"check"`
	Title    string     `json:"title"`
	Area     string     `json:"area"`
	Severity Severity   `json:"severity"`
	Clauses  []string   `json:"clauses"`
	Status   Status     `json:"status"`
	Message  string     `json:"message"`
	Hint     string     `json:"hint,omitempty"`
	Help     string     `json:"help,omitempty"`
	Evidence []Evidence `json:"evidence"`
	Location *Location  `json:"location"`
	// DecidedOver says what the check was decided over (for example "14 prepare_turn calls in 3 scenarios:
	// 2 refreshes, 3 retries on other replicas"), or, for a not_exercised result, what was missing and what
	// would reach it.
	DecidedOver string `json:"decided_over,omitempty"`
	// Tally is DecidedOver as counts when the check counted calls (nil for a sentence of another kind):
	// merging shards adds tallies and renders DecidedOver from the sum.
	Tally *Tally `json:"decided_over_counts,omitempty"`
}

// Evidence is one observed fact that supports a result. Text never holds a secret in clear: the conformance
// package masks every planted canary and every returned material before a result leaves it.
type Evidence struct {
	Text     string   `json:"text"`
	Scenario string   `json:"scenario,omitempty"`
	Steps    []string `json:"steps,omitempty"`
	Replica  string   `json:"replica,omitempty"`
	Callback string   `json:"callback,omitempty"`
	// CallID is the harness's id of the call on its replica ("5" for the fifth callback on r2, "start" for the
	// provider's construction); with Replica it names the call the deployment double's recorded requests
	// carry as call ("r2#5").
	CallID   string    `json:"call_id,omitempty"`
	Location *Location `json:"location,omitempty"`
}

// Location is a place in the provider's source.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line"`
}

// Summarize recomputes the summary from the results.
func (r *Report) Summarize() {
	s := Summary{Total: len(r.Results)}
	for _, res := range r.Results {
		switch res.Status {
		case StatusPassed:
			s.Passed++
		case StatusFailed:
			s.Failed++
		case StatusWarning:
			s.Warning++
		case StatusSkipped:
			s.Skipped++
		case StatusFlaky:
			s.Flaky++
		case StatusNotApplicable:
			s.NotApplicable++
		case StatusNotExercised:
			s.NotExercised++
		}
	}
	r.Summary = s
}
