package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// JUnit renders the report as JUnit XML for CI test views (GitLab, Jenkins, Buildkite, ...). The document is
// valid against both schemas strict consumers use: Jenkins xunit's junit-10.xsd and the Ant JUnit schema
// (windyroad JUnit.xsd). So <testsuites> carries no attribute, and a test case carries neither file nor line:
// the location is the first line of the failure text, relative to Root.
//
// One <testsuite name="astrabox"> holds one <testcase classname="AREA" name="CHECK-ID title"> per check.
// Failed and flaky checks carry a <failure> (type "failed" or "flaky"); not_exercised checks an <error> (the
// kit could not decide them); skipped and not_applicable checks a <skipped message="...">; a warning is a
// passing test case whose note goes to the suite's <system-out> (the Ant schema allows no output on a case).
//
// Time: the suite's time is Elapsed, the run's wall time, and its timestamp Started. These are the only
// non-deterministic facts the kit writes, and only here: a test case carries time 0, because the checks are
// decided together over every scenario after the scenarios ran, so a check has no time of its own.
type JUnit struct {
	// Root is the directory locations are made relative to (the repository root); empty means the project.
	Root string
	// Started is when the run started (the suite's timestamp); zero means now.
	Started time.Time
	// Elapsed is the run's wall time (the suite's time).
	Elapsed time.Duration
	// Hostname names the machine; empty means os.Hostname, else "localhost".
	Hostname string
}

// JUnit status types written in <failure type> and <error type>.
const (
	junitTypeUndecided = "undecided"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string      `xml:"name,attr"`
	Package    string      `xml:"package,attr"`
	ID         int         `xml:"id,attr"`
	Timestamp  string      `xml:"timestamp,attr"`
	Hostname   string      `xml:"hostname,attr"`
	Tests      int         `xml:"tests,attr"`
	Failures   int         `xml:"failures,attr"`
	Errors     int         `xml:"errors,attr"`
	Skipped    int         `xml:"skipped,attr"`
	Time       string      `xml:"time,attr"`
	Properties junitProps  `xml:"properties"`
	Cases      []junitCase `xml:"testcase"`
	SystemOut  string      `xml:"system-out"`
	SystemErr  string      `xml:"system-err"`
}

type junitProps struct {
	Props []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// Render writes r as JUnit XML.
func (j JUnit) Render(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("render junit: no report")
	}
	root := j.Root
	if root == "" {
		root = r.Provider.Project
	}
	suite := j.suite()
	suite.Properties = reportProperties(r)
	var notes []string
	for i := range r.Results {
		res := &r.Results[i]
		area := res.Area
		if area == "" {
			area = "Other"
		}
		c := junitCase{Classname: area, Name: sanitize(strings.TrimSpace(res.Check + " " + res.Title)), Time: "0"}
		msg := sanitize(res.Message)
		suite.Tests++
		switch res.Status {
		case StatusFailed, StatusFlaky:
			suite.Failures++
			if res.Status == StatusFlaky {
				msg = "flaky: " + msg
			}
			c.Failure = &junitProblem{Message: msg, Type: string(res.Status), Text: junitDetails(root, r.Provider.Project, res)}
		case StatusNotExercised:
			suite.Errors++
			c.Error = &junitProblem{Message: "not exercised: " + msg, Type: string(res.Status), Text: junitDetails(root, r.Provider.Project, res)}
		case StatusSkipped:
			suite.Skipped++
			c.Skipped = &junitSkipped{Message: msg}
		case StatusNotApplicable:
			suite.Skipped++
			c.Skipped = &junitSkipped{Message: strings.TrimSuffix("not applicable: "+msg, ": ")}
		case StatusWarning:
			notes = append(notes, res.Check+" warning (not a failure):\n"+junitDetails(root, r.Provider.Project, res))
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.SystemOut = strings.Join(notes, "\n")
	return writeJUnit(w, suite)
}

// RenderError writes the JUnit document of a run that could not decide (exit status 2): one test case named
// after the command, carrying an <error type="undecided"> with the error text, so a CI test view shows why
// the job stopped instead of nothing. msg must already be safe to print (masked and sanitised).
func (j JUnit) RenderError(w io.Writer, command, msg string) error {
	suite := j.suite()
	suite.Properties = junitProps{Props: []junitProperty{{"exit_status", "2"}}}
	first, _, _ := strings.Cut(msg, "\n")
	suite.Tests, suite.Errors = 1, 1
	suite.Cases = []junitCase{{
		Classname: "astrabox", Name: command, Time: "0",
		Error: &junitProblem{Message: first, Type: junitTypeUndecided, Text: msg},
	}}
	return writeJUnit(w, suite)
}

// suite is the empty astrabox suite with the run's time, timestamp and host.
func (j JUnit) suite() junitSuite {
	started := j.Started
	if started.IsZero() {
		started = time.Now()
	}
	host := j.Hostname
	if host == "" {
		if h, err := os.Hostname(); err == nil && strings.TrimSpace(h) != "" {
			host = h
		} else {
			host = "localhost"
		}
	}
	return junitSuite{
		Name: "astrabox", Package: "astrabox", ID: 0,
		Timestamp: started.UTC().Format("2006-01-02T15:04:05"),
		Hostname:  host,
		Time:      fmt.Sprintf("%.3f", j.Elapsed.Seconds()),
	}
}

// reportProperties are the suite's properties: provider, entry point, Python, seed and tool version.
func reportProperties(r *Report) junitProps {
	var out junitProps
	for _, p := range []junitProperty{
		{"provider", r.Provider.Name},
		{"entry_point", r.Provider.EntryPoint},
		{"python", r.Provider.Python},
		{"seed", fmt.Sprint(r.Seed)},
		{"tool_version", r.Tool.Version},
	} {
		if p.Value != "" {
			out.Props = append(out.Props, junitProperty{p.Name, sanitize(p.Value)})
		}
	}
	return out
}

// junitDetails is the text of a failure or error, one fact per line: the location relative to root first
// (JUnit has no place for it that strict consumers accept), then message, clauses, evidence with its context
// and steps, what the check was decided over, and the hint; provider text made safe.
func junitDetails(root, project string, res *Result) string {
	rel := func(l *Location) string {
		p := l.Path
		if r, ok := rootRel(root, project, p); ok {
			p = r
		}
		return locationString(&Location{Path: p, Line: l.Line})
	}
	var b strings.Builder
	if l := primaryLocation(res); l != nil {
		b.WriteString("at " + rel(l) + "\n")
	}
	if res.Message != "" {
		b.WriteString(res.Message + "\n")
	}
	if len(res.Clauses) > 0 {
		b.WriteString("clauses: " + strings.Join(res.Clauses, ", ") + "\n")
	}
	for i := range res.Evidence {
		e := &res.Evidence[i]
		b.WriteString("evidence: " + e.Text + "\n")
		if c := evidenceContext(e, rel); c != "" {
			b.WriteString("  " + c + "\n")
		}
		for j, st := range e.Steps {
			fmt.Fprintf(&b, "    %d. %s\n", j+1, st)
		}
	}
	if res.DecidedOver != "" {
		b.WriteString("decided over: " + res.DecidedOver + "\n")
	}
	if res.Hint != "" {
		b.WriteString("hint: " + res.Hint + "\n")
	}
	return sanitize(b.String())
}

// writeJUnit encodes one suite as a JUnit document.
func writeJUnit(w io.Writer, suite junitSuite) error {
	doc := junitSuites{Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("render junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("render junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("render junit: %w", err)
	}
	return nil
}
