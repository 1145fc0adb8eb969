package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// JSON renders the report as the astrabox.conformance/v1 document: indented by two spaces, ending in a newline,
// fields in the order of the model, results in report order, empty lists written as [] rather than null.
type JSON struct{}

// Render writes r as JSON.
func (JSON) Render(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("render json: no report")
	}
	out := normalized(r)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("render json: %w", err)
	}
	return nil
}

// normalized returns a copy of r with the schema set and nil lists replaced by empty ones, so the JSON shape
// does not depend on how the report was built.
func normalized(r *Report) *Report {
	out := *r
	if out.Schema == "" {
		out.Schema = Schema
	}
	out.Results = make([]Result, len(r.Results))
	for i, res := range r.Results {
		if res.Clauses == nil {
			res.Clauses = []string{}
		}
		if res.Evidence == nil {
			res.Evidence = []Evidence{}
		}
		out.Results[i] = res
	}
	return &out
}

// ReadJSON reads a report written by the json format. It checks the schema identifier, that every result
// names a check and has a known status, and rejects trailing data; it keeps the summary as written (Merge and
// Summarize recompute it).
func ReadJSON(r io.Reader) (*Report, error) {
	dec := json.NewDecoder(r)
	var rep Report
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("read report: not a JSON report: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("read report: unexpected data after the report object")
	}
	if rep.Schema != Schema {
		if rep.Schema == "" {
			return nil, fmt.Errorf("read report: no \"schema\" field: expected %q (was the file written with --format json?)", Schema)
		}
		return nil, fmt.Errorf("read report: schema %q is not supported: expected %q", rep.Schema, Schema)
	}
	for i, res := range rep.Results {
		if res.Check == "" {
			return nil, fmt.Errorf("read report: results[%d] has no check ID", i)
		}
		if !validStatus(res.Status) {
			return nil, fmt.Errorf("read report: results[%d] (%s) has status %q: expected passed, failed, warning, skipped, flaky, not_applicable or not_exercised", i, res.Check, res.Status)
		}
	}
	return &rep, nil
}
