package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit renders the report as JUnit XML for CI systems (GitLab, Jenkins, ...): one <testsuite name="astrabox">
// with one <testcase classname="AREA" name="CHECK-ID title"> per check. Failed and flaky checks carry a
// <failure> (type "failed" or "flaky") whose message is the result's message and whose text is the clauses,
// evidence and hint; skipped checks carry <skipped message="reason">; a warning is a passing test case with a
// note in <system-out>. So tests = summary total, failures = failed + flaky, skipped = skipped, errors = 0.
type JUnit struct{}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// Render writes r as JUnit XML.
func (JUnit) Render(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("render junit: no report")
	}
	suite := junitSuite{Name: "astrabox", Time: "0"}
	props := []junitProperty{
		{"provider", r.Provider.Name},
		{"entry_point", r.Provider.EntryPoint},
		{"python", r.Provider.Python},
		{"seed", fmt.Sprint(r.Seed)},
		{"tool_version", r.Tool.Version},
	}
	for _, p := range props {
		if p.Value != "" {
			suite.Properties = append(suite.Properties, p)
		}
	}
	for i := range r.Results {
		res := &r.Results[i]
		area := res.Area
		if area == "" {
			area = "Other"
		}
		c := junitCase{Classname: area, Name: strings.TrimSpace(res.Check + " " + res.Title), Time: "0"}
		if l := primaryLocation(res); l != nil {
			c.File, c.Line = l.Path, l.Line
			if rel, ok := relPath(r.Provider.Project, l.Path); ok {
				c.File = rel
			}
		}
		suite.Tests++
		switch res.Status {
		case StatusFailed, StatusFlaky:
			suite.Failures++
			msg := res.Message
			if res.Status == StatusFlaky {
				msg = "flaky: " + msg
			}
			c.Failure = &junitFailure{Message: msg, Type: string(res.Status), Text: plainDetails(res)}
		case StatusSkipped:
			suite.Skipped++
			c.Skipped = &junitSkipped{Message: res.Message}
		case StatusWarning:
			c.SystemOut = "warning (not a failure): " + plainDetails(res)
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := junitSuites{Name: "astrabox", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
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
