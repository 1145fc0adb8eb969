package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/term"
)

// update rewrites the golden files: go test ./internal/report -run Golden -update
var update = flag.Bool("update", false, "rewrite internal/report/testdata/golden from the renderers")

// goldenReport is the one fixed report every format is rendered from (check IDs, titles and areas as the
// check table had them when it was written; it is fixed data, not read from the table): a status of every kind, evidence with
// steps, replicas and calls, a location inside the project and one outside it, provider text with control
// characters, a long unbreakable word, and a finding that names a secret only by its masked form.
func goldenReport() *Report {
	r := &Report{
		Schema: Schema,
		Tool:   Tool{Name: "astrabox", Version: "1.2.3"},
		Provider: Provider{
			Name: "acme-cloud", EntryPoint: "acme = acme_provider.provider:AcmeProvider",
			Target: "acme_provider.provider:AcmeProvider", Source: "pyproject.toml",
			Project: "/home/dev/acme", Python: "3.11.9", PythonPath: "/usr/bin/python3", SessionBound: true,
		},
		Seed:      42,
		Scenarios: []string{"cold-start", "prewarm-claim"},
		Results: []Result{
			{Check: "EP-GROUP", Title: "Provider declared in the right entry-point group", Area: "discovery",
				Severity: SeverityError, Clauses: []string{"EP-GROUP"}, Status: StatusPassed},
			{Check: "SESSION-NAMES", Title: "Returned file names are safe, unique basenames", Area: "session",
				Severity: SeverityError, Clauses: []string{"SESSION-NAMES"}, Status: StatusFailed,
				Message:  `prepare_session returned "../token" as a file name for session s1; a file name must be a bare basename.`,
				Hint:     "Return bare names and build paths with context.file_path(name).",
				Help:     "The platform delivers each returned file into the workload's private home; a path escapes it.",
				Location: &Location{Path: "/home/dev/acme/src/acme_provider/provider.py", Line: 42},
				Evidence: []Evidence{{
					Text:     "returned files: ['../token', 'config.json']",
					Scenario: "cold-start",
					Steps:    []string{"cold_start session s1 on agent-1", "prepare_session(s1) on replica r1"},
					Replica:  "r1", Callback: "prepare_session", CallID: "r1#7",
					Location: &Location{Path: "/home/dev/acme/src/acme_provider/provider.py", Line: 42},
				}, {
					Text:     "log line: \x1b[31mwrote token ****\x1b[0m\tdone",
					Location: &Location{Path: "/usr/lib/python3/site-packages/acme_sdk/io.py", Line: 7},
					Replica:  "r2",
				}}},
			{Check: "SYNC-SKIP-UNCHANGED", Title: "Unchanged inputs cause no external write", Area: "synchronize",
				Severity: SeverityError, Clauses: []string{"SYNC-SKIP-UNCHANGED"}, Status: StatusFlaky,
				Message: "synchronize wrote PUT /v1/agents/agent-1 on an unchanged second run in 2 of 5 runs",
				Evidence: []Evidence{{Text: "PUT /v1/agents/agent-1 with an identical body", Scenario: "prewarm-claim",
					Steps: []string{"prewarm agent-1", "synchronize", "synchronize again"}, Callback: "synchronize"}}},
			{Check: "SYNC-NO-LOG-CONFIG", Title: "Trusted configuration is never logged", Area: "synchronize",
				Severity: SeverityError, Clauses: []string{"SYNC-NO-LOG-CONFIG"}, Status: StatusWarning,
				Message:  "a log record at DEBUG repeats a config key name; the value was not seen",
				Hint:     "Log key names only at DEBUG, or not at all.",
				Evidence: []Evidence{{Text: "DEBUG config keys: region, tier", Location: &Location{Path: "/home/dev/acme/src/acme_provider/sync.py", Line: 88}}}},
			{Check: "RECOVER-NO-FENCE-NEWER", Title: "recover fences only its own operation", Area: "synchronize",
				Severity: SeverityError, Clauses: []string{"RECOVER-NO-FENCE-NEWER"}, Status: StatusNotApplicable,
				Message: "the provider does not override recover"},
			{Check: "UA-IDEMPOTENT", Title: "perform_user_action is idempotent for the pending requirement", Area: "user-actions",
				Severity: SeverityError, Clauses: []string{"UA-IDEMPOTENT"}, Status: StatusNotExercised,
				Message: "no scenario performed a user action", DecidedOver: "0 calls"},
			{Check: "SESSION-CLI-PROBE", Title: "An image wrapper passes the CLI version probe through", Area: "session",
				Severity: SeverityWarning, Clauses: []string{"SESSION-CLI-PROBE"}, Status: StatusSkipped,
				Message: "decided by `astrabox image check-wrapper PATH`"},
			{Check: "PLAN-SYNC", Title: "plan is synchronous", Area: "plan",
				Severity: SeverityError, Clauses: []string{"PLAN-SYNC"}, Status: StatusFailed,
				Message: "plan is a coroutine function: supercalifragilisticexpialidocious_and_an_identifier_much_longer_than_eighty_columns_to_force_a_hard_break"},
		},
	}
	r.Summarize()
	return r
}

// goldenName is the golden file of a format.
func goldenName(f Format) string {
	ext := map[Format]string{FormatText: "txt", FormatJSON: "json", FormatJUnit: "xml", FormatSARIF: "sarif.json",
		FormatGitHub: "github.txt", FormatGitLab: "gitlab.json", FormatConcise: "concise.txt"}[f]
	if ext == "" {
		ext = "out"
	}
	return filepath.Join("testdata", "golden", "report."+ext)
}

// TestGoldenFormats renders goldenReport in every registered format (text without colour) and compares the
// bytes with testdata/golden; a format without a golden file fails, so a new format needs one.
func TestGoldenFormats(t *testing.T) {
	for _, name := range Formats() {
		f, err := ParseFormat(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			r, err := New(f, Options{Styles: term.NewStyles(false), Width: 100, Root: "/home/dev/acme",
				Manifest: "pyproject.toml", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Elapsed: 1500 * time.Millisecond})
			if err != nil || r == nil {
				t.Fatalf("format %s is registered but New gives no renderer (err %v): add its case to New", name, err)
			}
			var buf bytes.Buffer
			if err := r.Render(&buf, goldenReport()); err != nil {
				t.Fatal(err)
			}
			path := goldenName(f)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with: go test ./internal/report -run Golden -update)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s output differs from %s (if the change is meant, run go test ./internal/report -run Golden -update and review the diff)\n--- got\n%s", name, path, buf.String())
			}
		})
	}
}

// TestGoldenRendersAreStable renders twice: the same report gives the same bytes (no map order, no clock).
// The run's start is given: a renderer left to read the clock (JUnit's timestamp when Started is zero) would
// differ across a second's boundary, which is the caller's choice, not map order.
func TestGoldenRendersAreStable(t *testing.T) {
	for _, name := range Formats() {
		f, _ := ParseFormat(name)
		r, err := New(f, Options{Styles: term.NewStyles(false), Width: 100, Root: "/home/dev/acme",
			Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		var a, b bytes.Buffer
		if err := r.Render(&a, goldenReport()); err != nil {
			t.Fatal(err)
		}
		if err := r.Render(&b, goldenReport()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s renders the same report differently twice", name)
		}
	}
}
