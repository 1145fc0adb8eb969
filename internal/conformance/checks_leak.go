package conformance

import (
	"fmt"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

func init() {
	register(
		&Check{
			ID: "LEAK-LOG", Title: "No secret in logs, warnings, stdout or stderr", Area: AreaLeak, Severity: report.SeverityError,
			Clauses: []string{"LEAK-LOG"},
			Needs:   "a call of a callback the provider defines", Exercise: exAnyCall, Judges: judgesAll,
			Rationale: "The platform's logs, warnings and process output are shipped to log stores that many people read and that keep data for a long time. A credential, workload identity token or secret configuration value written there is disclosed to all of them.",
			Hint:      "Log identifiers and outcomes, never token or secret values; do not print or warn with them, and do not log exceptions whose text holds them. A record below the deployment's log-level (default INFO; a library's DEBUG body dump) is a warning: keep that library's logger at your level, e.g. logging.getLogger(\"botocore\").setLevel(logging.INFO).",
			Wrong:     "logger.info(\"prepared session with token %s\", context.workload_identity.token)",
			Right:     "logger.info(\"prepared session %s\", context.session_id)",
			Decide:    decideLeakLog,
		},
		&Check{
			ID: "LEAK-ERROR", Title: "No secret in exception text", Area: AreaLeak, Severity: report.SeverityError,
			Clauses: []string{"LEAK-ERROR"},
			Needs:   "an exception raised by a callback the provider defines", Exercise: exRaised, Judges: judgesAll,
			Rationale: "Exceptions raised by callbacks are logged by the platform with their message and traceback, and may be shown to operators. A secret in an exception's text ends up in those logs even when the provider itself never logs it.",
			Hint:      "Raise errors that name what failed (which service, which status), never the credential or request body.",
			Wrong:     "raise RuntimeError(f\"credential service refused key {config['secrets']['model_api_key']}\")",
			Right:     "raise RuntimeError(\"credential service refused the model key (HTTP 403)\")",
			Decide:    decideLeakError,
		},
		&Check{
			ID: "LEAK-USER-ACTION", Title: "No secret in user actions or user-action states", Area: AreaLeak, Severity: report.SeverityError,
			Clauses: []string{"LEAK-USER-ACTION"},
			Needs:   "a user action or user-action state returned or raised by the provider", Exercise: exUserActions(true), Judges: judgesUA,
			Rationale: "User actions and user-action states are shown in the console and returned by the public user-action endpoints, to the Session's owner and to anybody with read scope. A secret in a message, a URL or a state is handed to them.",
			Hint:      "Use fixed messages and the identity service's own URL; never put a token, assertion or secret configuration value in them.",
			Wrong:     "raise PreparationUserActionRequired(message=MSG, status=\"pending\", url=f\"{consent_url}?assertion={token}\")",
			Right:     "raise PreparationUserActionRequired(message=MSG, status=\"pending\", url=consent_url)",
			Decide:    decideLeakUserAction,
		},
	)
}

// leakText is one piece of text a provider emitted and where it came from.
type leakText struct {
	where string
	text  string
	loc   *report.Location
	// joined marks several records hunted together: reported only when no one record holds the secret.
	joined bool
	// logger and levelNo are a log record's logger and level (levelNo 0 for other text).
	logger  string
	levelNo int
}

// observationTexts lists the log records and warnings of a set of observations, and, when there are several
// log records, all of them joined in order: a secret logged in two halves by two calls is in no one record.
func observationTexts(obs harness.Observations) []leakText {
	var out []leakText
	if len(obs.Logs) > 1 {
		var all strings.Builder
		for _, l := range obs.Logs {
			all.WriteString(l.Message)
			all.WriteByte('\n')
		}
		out = append(out, leakText{where: "its log records taken together", text: all.String(), joined: true})
	}
	for _, l := range obs.Logs {
		t := l.Message
		if l.ExcText != nil {
			t += "\n" + *l.ExcText
		}
		out = append(out, leakText{where: fmt.Sprintf("a log record (level %s, logger %s)", l.Level, l.Logger), text: t, loc: at(l.File, l.Line),
			logger: l.Logger, levelNo: l.LevelNo})
	}
	for _, w := range obs.Warnings {
		out = append(out, leakText{where: "a " + w.Category + " warning", text: w.Message, loc: at(w.File, w.Line)})
	}
	return out
}

func decideLeakLog(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	report1 := func(t leakText, m string, evd report.Evidence) {
		key := t.where + "|" + m
		if t.loc != nil {
			key = fmt.Sprintf("%s:%d|%s", t.loc.Path, t.loc.Line, t.where)
		}
		if seen[key] {
			return
		}
		seen[key] = true
		below := ev.belowLogLevel(t.levelNo)
		if below {
			evd.Text += belowLevelNote(t.logger, ev.LogLevel)
		}
		out = append(out, Finding{Warning: below, Message: evd.Text, Location: t.loc, Evidence: []report.Evidence{evd}})
	}
	for _, h := range ev.Histories {
		for _, e := range h.Events {
			switch {
			case e.Call != nil:
				cs := callSite{h: h, c: e.Call, e: e}
				texts := observationTexts(e.Call.Observations)
				texts = append(texts,
					leakText{where: "stdout", text: e.Call.Stdout, loc: ev.methodLocation(e.Call.Method)},
					leakText{where: "stderr", text: e.Call.Stderr, loc: ev.methodLocation(e.Call.Method)})
				for _, t := range texts {
					if m := ev.Secrets.FindString(t.text); len(m) > 0 && !(t.joined && anyHolds(ev, texts[1:])) {
						msg := fmt.Sprintf("%s wrote %s (%s) to %s", e.Call.Method, m[0].Origin, m[0].Encoding, t.where)
						report1(t, m[0].Origin, ev.evidence(cs, msg, t.loc))
					}
				}
			case e.Kind == simulate.EventBackground && e.Background != nil:
				texts := append(observationTexts(*e.Background),
					leakText{where: "stdout", text: e.Stdout}, leakText{where: "stderr", text: e.Stderr})
				for _, t := range texts {
					if m := ev.Secrets.FindString(t.text); len(m) > 0 && !(t.joined && anyHolds(ev, texts[1:])) {
						msg := fmt.Sprintf("work left running on replica %s wrote %s (%s) to %s", e.Replica, m[0].Origin, m[0].Encoding, t.where)
						report1(t, m[0].Origin, bgEvidence(h, e.Replica, msg, t.loc))
					}
				}
			}
		}
	}
	for _, h := range ev.Histories {
		if len(h.Files) == 0 {
			continue
		}
		handed := handedSecrets(h)
		for _, f := range h.Files {
			m := handed.Find(f.Content())
			if len(m) == 0 {
				continue
			}
			who := "a replica"
			if f.Replica != "" {
				who = "replica " + f.Replica
			}
			msg := fmt.Sprintf("%s wrote %s (%s) to a file in its %s: %s", who, m[0].Origin, m[0].Encoding, f.Place, f.Path)
			if f.Replica == "" {
				msg = fmt.Sprintf("%s wrote %s (%s) to a file in the %s: %s", who, m[0].Origin, m[0].Encoding, f.Place, f.Path)
			}
			key := "file|" + string(f.Place) + "|" + f.Replica + "|" + f.Path + "|" + m[0].Origin
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, Finding{Message: msg, Evidence: []report.Evidence{{Text: msg, Scenario: h.Scenario, Replica: f.Replica}}})
		}
	}
	return out
}

// handedSecrets are the secrets the platform handed the provider in a history (workload identity tokens and
// secret configuration fields): those are what a file the provider writes must never hold. A credential it
// obtained, or material it returned, kept in a local cache is another matter (TURN-IDEMPOTENT and
// LEAK-CROSS-SESSION judge how it is kept), and is not hunted in files.
func handedSecrets(h *simulate.History) *secrets.Set {
	set := &secrets.Set{}
	for _, s := range h.Secrets {
		if s.Kind.Handed() {
			set.AddSecret(s)
		}
	}
	return set
}

// anyHolds tells whether one of texts holds a secret on its own.
func anyHolds(ev *Evidence, texts []leakText) bool {
	for _, t := range texts {
		if !t.joined && len(ev.Secrets.FindString(t.text)) > 0 {
			return true
		}
	}
	return false
}

// belowLogLevel tells whether a log record of this level is below the deployment's level (never for text
// that is not a log record, levelNo 0).
func (ev *Evidence) belowLogLevel(levelNo int) bool {
	return levelNo > 0 && levelNo < ev.LogLevel
}

// belowLevelNote explains a finding on a record below the deployment's level: why it is a warning, and the one
// line that quiets the logger's library (its top-level logger).
func belowLevelNote(logger string, level int) string {
	top, _, _ := strings.Cut(logger, ".")
	if top == "" || top == "root" {
		top = logger
	}
	name := LogLevelName(level)
	quiet := fmt.Sprintf("logging.getLogger(%q).setLevel(logging.%s)", top, name)
	if strings.HasPrefix(name, "level ") {
		quiet = fmt.Sprintf("logging.getLogger(%q).setLevel(%d)", top, level)
	}
	return fmt.Sprintf("; a warning, not a failure: the record is below the deployment's log level %s (log-level), so a deployment at that level never emits it; it would leak wherever logger %q runs at a lower level: keep it quiet with %s", name, top, quiet)
}

// withoutUserAction removes a raised user action's own message and URL from an exception text, so that a
// secret there is reported once, by LEAK-USER-ACTION.
func withoutUserAction(text string, ua *harness.UserAction) string {
	if ua == nil {
		return text
	}
	if ua.URL != nil && *ua.URL != "" {
		text = strings.ReplaceAll(text, *ua.URL, "")
	}
	if ua.Message != "" {
		text = strings.ReplaceAll(text, ua.Message, "")
	}
	return text
}

// exRaised needs an exception raised by a callback the provider defines; a provider that raised nothing and
// never talks to the deployment has no error path to judge.
func exRaised(ev *Evidence) Exercise {
	ex := needCalls(need{label: "raised",
		met:   func(_ *Evidence, cs callSite) bool { return cs.c.Error != nil },
		reach: "a step whose callback raises (a 503 from the deployment, a cancellation, a pending consent) reaches it"})(ev)
	if !ex.Met && !ev.providerRequests() {
		ex.NotApplicable = "the provider raised nothing and made no request to the deployment: it has no error path to judge"
	}
	return ex
}

func decideLeakError(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cs := range ev.calls() {
		e := cs.c.Error
		if e == nil {
			continue
		}
		parts := []struct{ where, text string }{
			{"message", e.Message}, {"repr", e.Repr}, {"traceback", e.Traceback},
		}
		for _, p := range parts {
			m := ev.Secrets.FindString(withoutUserAction(p.text, e.UserAction))
			if len(m) == 0 {
				continue
			}
			loc := ev.errorLocation(cs)
			key := string(cs.c.Method) + "|" + m[0].Origin
			if loc != nil {
				key = fmt.Sprintf("%s:%d", loc.Path, loc.Line)
			}
			if seen[key] {
				break
			}
			seen[key] = true
			msg := fmt.Sprintf("%s raised %s whose %s holds %s (%s)", cs.c.Method, e.Type, p.where, m[0].Origin, m[0].Encoding)
			out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
			break
		}
	}
	return out
}

func decideLeakUserAction(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	add := func(cs callSite, what string, text string, loc *report.Location) {
		m := ev.Secrets.FindString(text)
		if len(m) == 0 {
			return
		}
		key := string(cs.c.Method) + "|" + what
		if seen[key] {
			return
		}
		seen[key] = true
		msg := fmt.Sprintf("%s put %s (%s) in %s", cs.c.Method, m[0].Origin, m[0].Encoding, what)
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
	}
	for _, cs := range ev.calls() {
		if ua := raisedUserAction(cs); ua != nil {
			loc := ev.errorLocation(cs)
			add(cs, "a raised user action's message", ua.Message, loc)
			if ua.URL != nil {
				add(cs, "a raised user action's URL", *ua.URL, loc)
			}
		}
		if st := stateOf(cs); st != nil {
			// One finding per state: name the most specific place the secret is in.
			loc := ev.methodLocation(cs.c.Method)
			var labels []string
			for _, a := range st.Actions {
				labels = append(labels, a.ID, a.Label)
			}
			what := "a returned user-action state"
			if ua, ok := stateUserAction(st); ok {
				switch {
				case ua.URL != nil && len(ev.Secrets.FindString(*ua.URL)) > 0:
					what = "a returned state's user-action URL"
				case len(ev.Secrets.FindString(ua.Message)) > 0:
					what = "a returned state's user-action message"
				}
			}
			add(cs, what, string(st.UserAction)+"\n"+strings.Join(labels, "\n")+"\n"+st.Repr, loc)
		}
	}
	return out
}
