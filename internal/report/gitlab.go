package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// GitLab renders the report as a GitLab Code Quality report (a JSON array of Code Climate issues), for the
// merge request's code quality widget: one issue per failed, flaky, warning or not_exercised check. Paths are
// relative to Root (the repository root; GitLab resolves them against it); a result without a location inside
// Root points at the file that declares the provider, as in SARIF.
//
// Severity: a failed or flaky check is critical, major or minor for a check of severity error, warning or
// note; a warning is minor; not_exercised is info. Checks that judge secret handling are in the Security
// category, the others in Bug Risk.
type GitLab struct {
	// Root is the directory paths are made relative to; empty means the report's project directory.
	Root string
	// Manifest is the project file results without a location point at when the report does not name one.
	Manifest string
}

type gitlabIssue struct {
	Type        string         `json:"type"`
	CheckName   string         `json:"check_name"`
	Description string         `json:"description"`
	Categories  []string       `json:"categories"`
	Severity    string         `json:"severity"`
	Fingerprint string         `json:"fingerprint"`
	Location    gitlabLocation `json:"location"`
}

type gitlabLocation struct {
	Path  string      `json:"path"`
	Lines gitlabLines `json:"lines"`
}

type gitlabLines struct {
	Begin int `json:"begin"`
}

// GitLab Code Quality severities.
const (
	gitlabInfo     = "info"
	gitlabMinor    = "minor"
	gitlabMajor    = "major"
	gitlabCritical = "critical"
)

// Render writes r as a Code Quality JSON array.
func (g GitLab) Render(w io.Writer, r *Report) error {
	if r == nil {
		return fmt.Errorf("render gitlab: no report")
	}
	issues := []gitlabIssue{}
	for _, f := range findings(r, g.Root, g.Manifest) {
		res := f.res
		sev := gitlabCritical
		switch {
		case res.Status == StatusNotExercised:
			sev = gitlabInfo
		case res.Status == StatusWarning || res.Severity == SeverityNote:
			sev = gitlabMinor
		case res.Severity == SeverityWarning:
			sev = gitlabMajor
		}
		category := "Bug Risk"
		if _, ok := securityOf(res); ok {
			category = "Security"
		}
		issues = append(issues, gitlabIssue{
			Type: "issue", CheckName: res.Check, Description: f.prefix + res.Check + ": " + f.message,
			Categories: []string{category}, Severity: sev, Fingerprint: Fingerprint(res.Check, f.path, res.Message),
			Location: gitlabLocation{Path: f.path, Lines: gitlabLines{Begin: f.line}},
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(issues); err != nil {
		return fmt.Errorf("render gitlab: %w", err)
	}
	return nil
}
