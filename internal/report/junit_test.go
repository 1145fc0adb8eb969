package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

type xSuites struct {
	Attrs  []xml.Attr `xml:",any,attr"`
	Suites []struct {
		Name       string `xml:"name,attr"`
		Tests      int    `xml:"tests,attr"`
		Failures   int    `xml:"failures,attr"`
		Errors     int    `xml:"errors,attr"`
		Skipped    int    `xml:"skipped,attr"`
		Time       string `xml:"time,attr"`
		Timestamp  string `xml:"timestamp,attr"`
		Hostname   string `xml:"hostname,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		SystemOut string `xml:"system-out"`
		Cases     []struct {
			Attrs     []xml.Attr `xml:",any,attr"`
			Classname string     `xml:"classname,attr"`
			Name      string     `xml:"name,attr"`
			Time      string     `xml:"time,attr"`
			Failure   *xProblem  `xml:"failure"`
			Error     *xProblem  `xml:"error"`
			Skipped   *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

type xProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// withNewStatuses is the sample with a not_applicable and a not_exercised result added.
func withNewStatuses() *Report {
	r := sample()
	r.Results = append(r.Results,
		Result{Check: "RECOVER-TRUTH", Title: "Recover keeps the default", Area: "Synchronize and recover", Severity: SeverityError,
			Clauses: []string{"RECOVER-DEFAULT"}, Status: StatusNotApplicable, Message: "the provider keeps the platform's recover"},
		Result{Check: "TURN-VALIDITY-FRESH", Title: "Refresh before expiry", Area: "Turns", Severity: SeverityError,
			Clauses: []string{"TURN-REFRESH"}, Status: StatusNotExercised, Message: "no scenario refreshed a turn",
			DecidedOver: "0 refreshes: a scenario with a turn past half its validity would reach it",
			Location:    &Location{Path: "/home/dev/acme/src/acme_provider/turn.py", Line: 9}},
	)
	r.Summarize()
	return r
}

var fixedJUnit = JUnit{Started: time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC), Elapsed: 2345 * time.Millisecond, Hostname: "ci-runner"}

func renderJUnit(t *testing.T, j JUnit, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := j.Render(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestJUnitParsesAndCounts(t *testing.T) {
	r := withNewStatuses()
	out := renderJUnit(t, fixedJUnit, r)
	var doc xSuites
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("junit does not parse: %v\n%s", err, out)
	}
	s := r.Summary
	if len(doc.Attrs) != 0 {
		t.Errorf("<testsuites> has attributes %v (the Ant schema allows none)", doc.Attrs)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites", len(doc.Suites))
	}
	su := doc.Suites[0]
	if su.Name != "astrabox" || su.Tests != s.Total || su.Failures != s.Failed+s.Flaky || su.Skipped != s.Skipped+s.NotApplicable || su.Errors != s.NotExercised {
		t.Errorf("suite counts %+v do not match summary %+v", su, s)
	}
	if su.Time != "2.345" || su.Timestamp != "2026-12-01T19:00:00" || su.Hostname != "ci-runner" {
		t.Errorf("suite time %q timestamp %q hostname %q", su.Time, su.Timestamp, su.Hostname)
	}
	props := map[string]string{}
	for _, p := range su.Properties {
		props[p.Name] = p.Value
	}
	if props["entry_point"] != "acme = acme_provider.provider:AcmeProvider" || props["seed"] != "1234" {
		t.Errorf("properties %v", props)
	}
	if len(su.Cases) != s.Total {
		t.Fatalf("%d test cases, want %d", len(su.Cases), s.Total)
	}
	failures, skipped, errors := 0, 0, 0
	for i, c := range su.Cases {
		res := r.Results[i]
		if c.Classname != res.Area || c.Name != res.Check+" "+res.Title || c.Time != "0" || len(c.Attrs) != 0 {
			t.Errorf("case %d: classname %q name %q time %q extra %v", i, c.Classname, c.Name, c.Time, c.Attrs)
		}
		if c.Failure != nil {
			failures++
		}
		if c.Skipped != nil {
			skipped++
		}
		if c.Error != nil {
			errors++
		}
		switch res.Status {
		case StatusFailed, StatusFlaky:
			if c.Failure == nil || c.Failure.Type != string(res.Status) || !strings.Contains(c.Failure.Message, res.Message) {
				t.Errorf("case %s: failure %+v", res.Check, c.Failure)
			}
		case StatusWarning:
			if c.Failure != nil || !strings.Contains(su.SystemOut, res.Check+" warning (not a failure)") || !strings.Contains(su.SystemOut, res.Message) {
				t.Errorf("warning case %s: failure %v suite system-out %q", res.Check, c.Failure, su.SystemOut)
			}
		case StatusSkipped:
			if c.Skipped == nil || c.Skipped.Message != res.Message {
				t.Errorf("skipped case %s: %+v", res.Check, c.Skipped)
			}
		case StatusNotApplicable:
			if c.Skipped == nil || c.Skipped.Message != "not applicable: "+res.Message {
				t.Errorf("not_applicable case %s: %+v", res.Check, c.Skipped)
			}
		case StatusNotExercised:
			if c.Error == nil || c.Error.Type != "not_exercised" || !strings.Contains(c.Error.Message, res.Message) ||
				!strings.Contains(c.Error.Text, "decided over: 0 refreshes") || !strings.HasPrefix(c.Error.Text, "at src/acme_provider/turn.py:9\n") {
				t.Errorf("not_exercised case %s: %+v", res.Check, c.Error)
			}
		case StatusPassed:
			if c.Failure != nil || c.Skipped != nil || c.Error != nil {
				t.Errorf("passed case %s carries a failure, skip or error", res.Check)
			}
		}
	}
	if failures != su.Failures || skipped != su.Skipped || errors != su.Errors {
		t.Errorf("elements (%d failures, %d skipped, %d errors) do not match attributes", failures, skipped, errors)
	}
	sess := su.Cases[2].Failure
	for _, want := range []string{"at src/acme_provider/provider.py:42\n", "clauses: SESSION-NAMES", "evidence: returned files",
		"scenario cold-start", "1. create session s1", "hint: Return bare names", `\x1b[31mwrote`} {
		if !strings.Contains(sess.Text, want) {
			t.Errorf("failure text lacks %q:\n%s", want, sess.Text)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\uFFFD") {
		t.Error("provider control characters reach the XML instead of being shown as escapes")
	}
}

// TestJUnitStrictConsumersAccept validates the report, every status included, and the exit-2 document with
// xmllint against Jenkins xunit's junit-10.xsd and the Ant JUnit schema; the old layout (file and line on a
// test case, skipped on <testsuites>) is rejected by both, so the check can fail.
func TestJUnitStrictConsumersAccept(t *testing.T) {
	var errDoc bytes.Buffer
	if err := fixedJUnit.RenderError(&errDoc, "conformance run", "provider does not load: No module named 'acme'\n  interpreter /usr/bin/python3"); err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{
		"report":       renderJUnit(t, fixedJUnit, withNewStatuses()),
		"empty report": renderJUnit(t, JUnit{}, &Report{Schema: Schema}),
		"exit 2":       errDoc.String(),
	}
	old := strings.Replace(docs["report"], `<testcase name="SESSION-NAMES`, `<testcase file="src/p.py" line="42" name="SESSION-NAMES`, 1)
	old = strings.Replace(old, "<testsuites>", `<testsuites skipped="1">`, 1)
	for _, schema := range junitSchemas {
		for name, doc := range docs {
			if msg := xmllintSchema(t, schema, doc); msg != "" {
				t.Errorf("%s rejects the %s JUnit:\n%s\n%s", schema, name, msg, doc)
			}
		}
		if xmllintSchema(t, schema, old) == "" {
			t.Errorf("%s accepts testcase@file and testsuites@skipped: the validation proves nothing", schema)
		}
	}
	var doc xSuites
	if err := xml.Unmarshal(errDoc.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Suites[0].Cases
	if doc.Suites[0].Errors != 1 || len(c) != 1 || c[0].Error == nil || c[0].Error.Type != "undecided" ||
		c[0].Error.Message != "provider does not load: No module named 'acme'" || !strings.Contains(c[0].Error.Text, "interpreter /usr/bin/python3") {
		t.Errorf("exit-2 document: %+v", doc.Suites[0])
	}
}

func TestJUnitLocationsRelativeToRoot(t *testing.T) {
	r := sample()
	out := renderJUnit(t, JUnit{Root: "/home/dev", Hostname: "h"}, r)
	if !strings.Contains(out, "at acme/src/acme_provider/provider.py:42") {
		t.Errorf("location not relative to the repository root:\n%s", out)
	}
	if !strings.Contains(out, "at /usr/lib/python3/site-packages/acme_sdk/io.py:7") {
		t.Errorf("a location outside the root is not kept absolute:\n%s", out)
	}
}
