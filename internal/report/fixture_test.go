package report

// sample is a report with every status, evidence of every kind, a location inside and one outside the
// project, provider text with control characters and long unbreakable words.
func sample() *Report {
	r := &Report{
		Schema: Schema,
		Tool:   Tool{Name: "astrabox", Version: "0.3.0"},
		Provider: Provider{
			Name: "acme-cloud", EntryPoint: "acme = acme_provider.provider:AcmeProvider",
			Target: "acme_provider.provider:AcmeProvider", Source: "pyproject.toml",
			Project: "/home/dev/acme", Python: "3.11.9", PythonPath: "/usr/bin/python3",
		},
		Seed:      1234,
		Scenarios: []string{"cold-start", "prewarm-claim"},
		Results: []Result{
			{Check: "EP-GROUP", Title: "Provider is declared in the entry-point group", Area: "Discovery",
				Severity: SeverityError, Clauses: []string{"EP-GROUP"}, Status: StatusPassed},
			{Check: "EP-NAME", Title: "Provider has a stable name", Area: "Discovery",
				Severity: SeverityError, Clauses: []string{"EP-NAME"}, Status: StatusPassed},
			{Check: "SESSION-NAMES", Title: "Returned file names are safe basenames", Area: "Session materials",
				Severity: SeverityError, Clauses: []string{"SESSION-NAMES", "SESSION-FILE-PATH"}, Status: StatusFailed,
				Message:  `prepare_session returned "../token" as a file name for session s-4f9a1c22; a file name must be a bare basename, unique within one result.`,
				Hint:     "Return bare names and build paths with context.file_path(name).",
				Help:     "The platform delivers each returned file into the workload's private home; a path escapes it.",
				Location: &Location{Path: "/home/dev/acme/src/acme_provider/provider.py", Line: 42},
				Evidence: []Evidence{{
					Text:     "returned files: ['../token', 'config.json']",
					Scenario: "cold-start",
					Steps:    []string{"create session s1 for agent a1", "cold start on box b1", "prepare_session(s1) on replica r1"},
					Replica:  "r1", Callback: "prepare_session",
					Location: &Location{Path: "src/acme_provider/provider.py", Line: 42},
				}, {
					Text:     "log line: \x1b[31mwrote /home/acme/.token\x1b[0m\tdone",
					Location: &Location{Path: "/usr/lib/python3/site-packages/acme_sdk/io.py", Line: 7},
					Replica:  "r2",
				}}},
			{Check: "SYNC-SKIP-UNCHANGED", Title: "Unchanged inputs cause no external writes", Area: "Synchronize and recover",
				Severity: SeverityError, Clauses: []string{"SYNC-SKIP-UNCHANGED"}, Status: StatusFlaky,
				Message: "synchronize wrote PUT /v1/agents/a1 on an unchanged second run in 2 of 5 runs",
				Evidence: []Evidence{{Text: "PUT /v1/agents/a1 with an identical body", Scenario: "prewarm-claim",
					Steps: []string{"prewarm agent a1", "synchronize", "synchronize again with the same inputs"}, Callback: "synchronize"}}},
			{Check: "SYNC-NO-LOG-CONFIG", Title: "Trusted configuration is never logged", Area: "Synchronize and recover",
				Severity: SeverityWarning, Clauses: []string{"SYNC-NO-LOG-CONFIG"}, Status: StatusWarning,
				Message:  "a log record at DEBUG repeats a config key name; the value was not seen",
				Hint:     "Log key names only at DEBUG, or not at all.",
				Evidence: []Evidence{{Text: "DEBUG config keys: region, tier", Location: &Location{Path: "src/acme_provider/sync.py", Line: 88}}}},
			{Check: "SYNC-IDENTITY", Title: "External identity is keyed by Agent ID", Area: "Synchronize and recover",
				Severity: SeverityError, Clauses: []string{"SYNC-IDENTITY"}, Status: StatusPassed},
			{Check: "RECOVER-NO-FENCE-NEWER", Title: "Recovering never fences a newer operation", Area: "Synchronize and recover",
				Severity: SeverityError, Clauses: []string{"RECOVER-NO-FENCE-NEWER"}, Status: StatusSkipped,
				Message: "the provider does not override recover"},
			{Check: "PLAN-SYNC", Title: "plan is synchronous", Area: "Plan",
				Severity: SeverityError, Clauses: []string{"PLAN-SYNC"}, Status: StatusFailed,
				Message: "plan is a coroutine function: supercalifragilisticexpialidocious_and_an_identifier_much_longer_than_eighty_columns_to_force_a_hard_break_somewhere"},
		},
	}
	r.Summarize()
	return r
}
