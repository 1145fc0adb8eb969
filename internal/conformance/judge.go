package conformance

import (
	"fmt"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"path/filepath"

	"github.com/astrabox-dev/astrabox/internal/report"
)

// Verdicts is how a run's results are decided: which checks are selected, which the project skips with a
// reason, and over what evidence. Decide (conformance run), Failing (exploration and simulate) and the
// near-miss report all judge through it, so a check means the same everywhere.
type Verdicts struct {
	// Checks and Skip select checks by ID, glob or area (--check, --skip).
	Checks, Skip []string
	// Skipped are the checks the project skips, with its reason ([tool.astrabox] skip).
	Skipped map[string]string
	// SkipFile names the settings file the reasons come from ("pyproject.toml").
	SkipFile string
}

// Judge decides every selected check over the evidence, in table order. Results are not yet masked or
// made project-relative beyond locations: callers mask them before they leave the package.
func (v Verdicts) Judge(ev *Evidence) []report.Result {
	var out []report.Result
	for _, c := range Checks() {
		if !Selected(c, v.Checks, v.Skip) {
			continue
		}
		out = append(out, v.judge(c, ev))
	}
	return out
}

// judge decides one check. The order is fixed: a reasoned skip, a check decided elsewhere, a run that could
// not reach the check, then the check's findings (a failure or warning stands whatever was exercised), then
// not applicable, then passed only when its requirement was met, else not exercised.
func (v Verdicts) judge(c *Check, ev *Evidence) report.Result {
	res := report.Result{Check: c.ID, Title: c.Title, Area: c.Area, Severity: c.Severity, Clauses: c.Clauses, Hint: c.Hint, Help: c.Rationale, Evidence: []report.Evidence{}}
	skip := func(msg string) report.Result {
		res.Status, res.Message = report.StatusSkipped, msg
		return res
	}
	if reason, ok := v.Skipped[c.ID]; ok {
		file := v.SkipFile
		if file == "" {
			file = "pyproject.toml"
		}
		return skip("skipped by " + filepath.Base(file) + ": " + reason)
	}
	if c.Elsewhere != "" && (c.HereWhen == nil || !c.HereWhen(ev)) {
		return skip(c.Elsewhere)
	}
	if reason, ok := ev.Skipped[c.ID]; ok {
		return skip(reason)
	}
	if reason, ok := ev.Skipped["*"]; ok && !c.Static {
		return skip(reason)
	}
	ex := Exercise{Met: true}
	if c.Exercise != nil {
		ex = c.Exercise(ev)
	}
	if n := ev.unhunted(); n > 0 && c.Area == AreaLeak && ex.Met {
		// Values past the secret cap were never hunted: a clean scan says nothing about them.
		ex.Met = false
		ex.Missing = fmt.Sprintf("%d secret values (past the cap of %d) were not hunted, so no scan could pass them; return fewer or smaller materials per scenario", n, secrets.MaxSecrets)
	}
	res.DecidedOver = ex.Over
	if ex.Tally != nil {
		res.DecidedOver, res.Tally = ex.Tally.Sentence(), ex.Tally
	}
	if findings := c.Decide(ev); len(findings) > 0 {
		applyFindings(&res, c, findings, ev.Project)
		return res
	}
	switch {
	case ev.keepsDefaults(c.Judges) != "":
		res.Status, res.Message, res.DecidedOver, res.Tally = report.StatusNotApplicable, ev.keepsDefaults(c.Judges), "", nil
	case ex.NotApplicable != "":
		res.Status, res.Message = report.StatusNotApplicable, ex.NotApplicable
	case ex.Met:
		res.Status, res.Message = report.StatusPassed, "kept in every scenario"
	default:
		res.Status, res.Message = report.StatusNotExercised, notExercised(c, ex)
	}
	return res
}

// unhunted is how many secret values the run's set dropped past its cap.
func (ev *Evidence) unhunted() int {
	if ev.Secrets == nil {
		return 0
	}
	return ev.Secrets.Dropped()
}

// applyFindings makes a result failed (or warning, when every finding is uncertain or the check can only
// warn) from its findings, with their evidence and locations.
func applyFindings(res *report.Result, c *Check, findings []Finding, project string) {
	failed := 0
	for _, f := range findings {
		if !f.Warning && c.WarningOnly == "" {
			failed++
		}
	}
	res.Status = report.StatusWarning
	if failed > 0 {
		res.Status = report.StatusFailed
	}
	res.Message = findings[0].Message
	if len(findings) > 1 {
		res.Message += fmt.Sprintf(" (and %d more)", len(findings)-1)
	}
	for _, f := range findings {
		loc := relLocation(f.Location, project)
		if res.Location == nil && loc != nil {
			res.Location = loc
		}
		for _, e := range f.Evidence {
			e.Location = relLocation(e.Location, project)
			if e.Location == nil {
				e.Location = loc
			}
			res.Evidence = append(res.Evidence, e)
		}
		if len(f.Evidence) == 0 {
			res.Evidence = append(res.Evidence, report.Evidence{Text: f.Message, Location: loc})
		}
	}
}

// notExercised is the message of a not_exercised result: what the check needs, what was seen instead and what
// would reach it.
func notExercised(c *Check, ex Exercise) string {
	msg := "not exercised: the check needs " + c.Needs
	if ex.Missing != "" {
		msg += "; " + ex.Missing
	}
	return msg
}
