package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// judgesMaterials lists the callbacks that return materials, which the materials checks judge.
var judgesMaterials = []simulate.Callback{simulate.CallPrepareSession, simulate.CallPrepareTurn}

func init() {
	register(
		&Check{
			ID: "BOUND-MATERIAL", Title: "A session-bound provider returns Session material", Area: AreaSession, Severity: report.SeverityError,
			Clauses: []string{"BOUND-MATERIAL"},
			Needs:   "a session-bound provider's prepare_session that returned materials", Exercise: exBoundMaterial, Judges: judgesPlan,
			Rationale: "A plan with session_bound=True tells the platform to keep the engine uninitialized in inventory until a Session's material arrives, which costs warm capacity. A prepare_session that then returns no file and no environment makes the platform pay that price for nothing, and usually means the material the engine needs was forgotten or silently skipped.",
			Hint:      "Return the Session's files or environment from prepare_session, raise when they cannot be prepared, or declare session_bound=False.",
			Wrong:     "async def prepare_session(self, *, context):\n    if not self._enabled:\n        return RuntimeMaterials()  # plan said session_bound=True",
			Right:     "async def prepare_session(self, *, context):\n    token = await self._issue(context.principal_id)\n    return RuntimeMaterials(files=(RuntimeFile(name=\"token.json\", content=token),))",
			Decide:    decideBoundMaterial,
		},
		&Check{
			ID: "SESSION-NAMES", Title: "Returned file names are safe, unique basenames", Area: AreaSession, Severity: report.SeverityError,
			Clauses: []string{"SESSION-NAMES"},
			Needs:   "RuntimeMaterials returned by prepare_session or prepare_turn", Exercise: exMaterials(judgesMaterials...), Judges: judgesMaterials,
			Rationale: "The platform writes each RuntimeFile into the workload's private home under its name. A name with a directory part, a leading dot or a dot-dot could escape that directory or shadow another file, so the platform refuses the whole result; two files with the same name in one result make it ambiguous which bytes land.",
			Hint:      "Name files with plain basenames such as token.json ([A-Za-z0-9][A-Za-z0-9._-]*, no \"..\"), each name once per result.",
			Wrong:     "RuntimeMaterials(files=(RuntimeFile(name=\"../token.json\", content=data),))",
			Right:     "RuntimeMaterials(files=(RuntimeFile(name=\"token.json\", content=data),))",
			Decide:    decideSessionNames,
		},
		&Check{
			ID: "SESSION-FILE-PATH", Title: "Environment values name files through context.file_path", Area: AreaSession, Severity: report.SeverityError,
			Clauses: []string{"SESSION-FILE-PATH"},
			Needs:   "RuntimeMaterials returned by prepare_session or prepare_turn", Exercise: exMaterials(judgesMaterials...), Judges: judgesMaterials,
			Rationale: "Only the platform knows where a RuntimeFile is delivered: context.file_path(name) is that path, stable for the Session and sandbox. An environment value that points at a returned file by a bare name or a path the provider guessed sends the engine to a file that does not exist, or to a stale one.",
			Hint:      "Build the value with context.file_path(name) for the same name you return.",
			Wrong:     "environment={\"TOKEN_FILE\": \"/home/workload/.config/tool/token.json\"}",
			Right:     "environment={\"TOKEN_FILE\": context.file_path(\"token.json\")}",
			Decide:    decideSessionFilePath,
		},
		&Check{
			ID: "SESSION-REDACTION", Title: "Material never shows in representations or error text", Area: AreaSession, Severity: report.SeverityError,
			Clauses: []string{"SESSION-REDACTION"},
			Needs:   "RuntimeMaterials returned by prepare_session or prepare_turn", Exercise: exMaterials(judgesMaterials...), Judges: judgesMaterials,
			Rationale: "The platform logs returned objects and callback errors. The seams dataclasses leave material bytes and environment values out of their representations for that reason; a custom subclass or wrapper whose repr shows them, or an exception whose text quotes them, writes live credentials into logs.",
			Hint:      "Return the seams RuntimeFile and RuntimeMaterials types unchanged and keep material values out of exception messages.",
			Wrong:     "class DebugFile(RuntimeFile):\n    def __repr__(self):\n        return f\"DebugFile({self.name}, {self.content!r})\"",
			Right:     "RuntimeFile(name=\"session.key\", content=key)  # repr shows <redacted N bytes>",
			Decide:    decideSessionRedaction,
		},
		&Check{
			ID: "SESSION-ENV-RESERVED", Title: "No platform-owned environment name is returned", Area: AreaSession, Severity: report.SeverityError,
			Clauses: []string{"SESSION-ENV-RESERVED"},
			Needs:   "RuntimeMaterials returned by prepare_session or prepare_turn", Exercise: exMaterials(judgesMaterials...), Judges: judgesMaterials,
			Rationale: "The platform sets names such as PATH, HOME and the ASTRABOX_, CLAUDE_CODE_ and ANTHROPIC_ families itself, and the engine depends on them. It never lets a provider overwrite them: a Session environment that tries blocks activation with RUNTIME_PREPARATION_FAILED.",
			Hint:      "Use a provider-specific name (MYDEPLOY_TOKEN_FILE) instead of a platform-owned one.",
			Wrong:     "environment={\"HOME\": context.file_path(\"home\")}",
			Right:     "environment={\"MYDEPLOY_TOKEN_FILE\": context.file_path(\"token.json\")}",
			Decide:    decideSessionEnvReserved,
		},
		&Check{
			ID: "SESSION-CLI-PROBE", Title: "An image wrapper passes the CLI version probe through", Area: AreaSession, Severity: report.SeverityWarning,
			Clauses:   []string{"SESSION-CLI-PROBE"},
			Rationale: "The Claude Agent SDK runs `claude -v` before it starts the CLI, without the Session environment. An image wrapper that gates the CLI on Session material must pass -v and --version through unchanged, or every Session fails to start before the provider's material is ever used.",
			Hint:      "In the wrapper, exec the real CLI for -v and --version before looking for Session material; check it with `astrabox image check-wrapper PATH`.",
			Wrong:     "#!/bin/sh\n[ -r \"$MYDEPLOY_TOKEN_FILE\" ] || { echo 'no token' >&2; exit 1; }\nexec /opt/claude/bin/claude \"$@\"",
			Right:     "#!/bin/sh\ncase \"$1\" in -v|--version) exec /opt/claude/bin/claude \"$@\";; esac\n[ -r \"$MYDEPLOY_TOKEN_FILE\" ] || { echo 'no token' >&2; exit 1; }\nexec /opt/claude/bin/claude \"$@\"",
			Elsewhere: "decided by `astrabox image check-wrapper PATH` on the image's CLI wrapper, or in this run when the project names it (image-wrapper in [tool.astrabox]); a provider run alone cannot observe the probe",
			HereWhen:  func(ev *Evidence) bool { return ev.Wrapper != nil || ev.WrapperUnusable != "" },
			Needs:     "the project's image wrapper (image-wrapper), run with the SDK's version probes", Exercise: exWrapper, Judges: judgesAll,
			Decide: decideSessionCLIProbe,
		},
		&Check{
			ID: "LEAK-CROSS-SESSION", Title: "One principal's material never reaches another principal's Session", Area: AreaLeak, Severity: report.SeverityError,
			Clauses: []string{"LEAK-CROSS-SESSION"},
			Needs:   "material returned to Sessions of two principals in one scenario", Exercise: exCrossSession, Judges: judgesMaterials,
			Rationale: "Session material acts for the Session's owner. A credential issued for one principal that is cached by Agent, by sandbox or in process memory and handed to another principal's Session lets that user act with someone else's identity and permissions.",
			Hint:      "Key every cache of material by principal (and Session), and issue material for context.principal_id only.",
			Wrong:     "cached = self._by_agent.get(context.agent_id) or await self._issue(context.principal_id)",
			Right:     "cached = self._by_principal.get((context.agent_id, context.principal_id)) or await self._issue(context.principal_id)",
			Decide:    decideLeakCrossSession,
		},
	)
}

// sessionMaterialMethods are the callbacks that return RuntimeMaterials.
var sessionMaterialMethods = []simulate.Callback{simulate.CallPrepareSession, simulate.CallPrepareTurn}

// callContext is a call's context argument as its typed record. The platform decodes every context it sends
// into this record before sending it (simulate's checkArgs), so an error means evidence the platform did not
// record (a hand-edited recording): it fails loudly, naming the call, rather than judge a guess.
func callContext(c *simulate.CallRecord) simulate.ContextArg {
	ctx, err := c.Context()
	if err != nil {
		panic("conformance: " + err.Error())
	}
	return ctx
}

// filePathsDir is the directory context.file_path resolves names in for a call.
func filePathsDir(c *simulate.CallRecord) string {
	if d := callContext(c).FilePathsDir; d != "" {
		return strings.TrimRight(d, "/")
	}
	return simulate.RuntimeFileDir(c.Ctx.Session)
}

// sessionLabel names a call's Session and trigger for messages.
func sessionLabel(c *simulate.CallRecord) string {
	s := "session " + c.Ctx.Session
	if c.Ctx.Trigger != "" {
		s += ", trigger " + c.Ctx.Trigger
	}
	if c.Ctx.Attempt != "" {
		s += ", attempt " + c.Ctx.Attempt
	}
	if c.Ctx.Refresh {
		s += ", refresh"
	}
	return s
}

// shortName quotes a provider-chosen name for a message, bounded in length.
func shortName(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}

// exMaterials needs RuntimeMaterials returned by one of the callbacks.
func exMaterials(cbs ...simulate.Callback) func(ev *Evidence) Exercise {
	return needCalls(need{calls: cbs, label: "returned materials",
		met: func(_ *Evidence, cs callSite) bool { return cs.materials() != nil },
		also: func(_ *Evidence, cs callSite) []string {
			if m := cs.materials(); m != nil && len(m.Files) > 0 {
				return []string{"with files"}
			}
			return nil
		},
		reach: "claim, cold-start and turn steps with consent granted reach it"})
}

// exBoundMaterial applies only to a session-bound provider.
func exBoundMaterial(ev *Evidence) Exercise {
	bound, plans := 0, 0
	for _, cs := range ev.calls(simulate.CallPlan) {
		if cs.c.Returned(simulate.KindPlan) {
			plans++
			if cs.c.Result.SessionBound {
				bound++
			}
		}
	}
	if plans > 0 && bound == 0 {
		return Exercise{Over: fmt.Sprintf("%d plan calls", plans), NotApplicable: "every plan returned session_bound=False: the clause concerns session-bound providers only"}
	}
	if plans == 0 {
		return Exercise{Missing: "no plan returned, so it is unknown whether the provider is session-bound; a scenario that prewarms or cold-starts an Agent reaches it"}
	}
	return exMaterials(simulate.CallPrepareSession)(ev)
}

func decideBoundMaterial(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		bound := map[string]bool{} // agent -> the latest plan's session_bound
		for _, e := range h.Events {
			c := e.Call
			if c == nil {
				continue
			}
			switch c.Method {
			case simulate.CallPlan:
				if c.Outcome == simulate.OutcomeReturned && c.Result != nil && simulate.KindPlan.Of(c.Result) {
					bound[c.Ctx.Agent] = c.Result.SessionBound
				}
			case simulate.CallPrepareSession:
				cs := callSite{h: h, c: c, e: e}
				m := cs.materials()
				if m == nil || !bound[c.Ctx.Agent] || len(m.Files) > 0 || len(m.Environment) > 0 {
					continue
				}
				key := h.Scenario + "|" + c.Ctx.Trigger
				if seen[key] {
					continue
				}
				seen[key] = true
				loc := ev.methodLocation(simulate.CallPrepareSession)
				msg := fmt.Sprintf("plan declared session_bound=True, but prepare_session returned no file and no environment (%s)", sessionLabel(c))
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
			}
		}
	}
	return out
}

func decideSessionNames(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cs := range ev.calls(sessionMaterialMethods...) {
		m := cs.materials()
		if m == nil {
			continue
		}
		count := map[string]int{}
		for _, f := range m.Files {
			count[f.Name]++
		}
		for _, f := range m.Files {
			var problem string
			switch {
			case !simulate.IsSafeFileName(f.Name):
				problem = "is not a safe basename (letters, digits, '.', '_' and '-', no directory part, no leading dot, no \"..\")"
			case count[f.Name] > 1:
				problem = fmt.Sprintf("appears %d times in one result", count[f.Name])
			default:
				continue
			}
			key := string(cs.c.Method) + "|" + f.Name
			if seen[key] {
				continue
			}
			seen[key] = true
			loc := ev.methodLocation(cs.c.Method)
			msg := fmt.Sprintf("%s returned the file name %s, which %s (%s)", cs.c.Method, shortName(f.Name), problem, sessionLabel(cs.c))
			out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
		}
	}
	return out
}

// namedFile returns the returned file name an environment value names (its last path element), or "".
func namedFile(value string, names map[string]bool) string {
	base := value
	if i := strings.LastIndex(value, "/"); i >= 0 {
		base = value[i+1:]
	}
	if names[base] {
		return base
	}
	return ""
}

func decideSessionFilePath(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cs := range ev.calls(sessionMaterialMethods...) {
		m := cs.materials()
		if m == nil || len(m.Files) == 0 || len(m.Environment) == 0 {
			continue
		}
		names := map[string]bool{}
		for _, f := range m.Files {
			names[f.Name] = true
		}
		dir := filePathsDir(cs.c)
		for _, k := range slices.Sorted(maps.Keys(m.Environment)) {
			v := m.Environment[k]
			n := namedFile(v, names)
			if n == "" || v == dir+"/"+n {
				continue
			}
			key := string(cs.c.Method) + "|" + k
			if seen[key] {
				continue
			}
			seen[key] = true
			loc := ev.methodLocation(cs.c.Method)
			msg := fmt.Sprintf("%s's environment value %s names the returned file %s but is not context.file_path(%s), which is %s (%s)",
				cs.c.Method, k, shortName(n), shortName(n), dir+"/"+n, sessionLabel(cs.c))
			out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
		}
	}
	return out
}

// minRedactedMaterial is the shortest material value SESSION-REDACTION looks for: shorter environment values
// ("production", "eu-west-1") occur in ordinary text such as paths in a traceback.
const minRedactedMaterial = 12

// materialNeedle is a form of a returned material value to look for in text that must not show it.
type materialNeedle struct {
	text   string
	origin string
}

// materialFinder finds returned material (in every encoding the secrets package knows, plus the form
// Python's repr gives bytes) in text.
type materialFinder struct {
	set   *secrets.Set
	extra []materialNeedle
}

// maxReprNeedle is the longest material whose Python bytes repr is hunted: a repr body is at least as long as
// the bytes, and longer than any text the finder searches.
const maxReprNeedle = 1 << 20

func newMaterialFinder(material map[string]string) *materialFinder {
	f := &materialFinder{set: &secrets.Set{}}
	values := make([]string, 0, len(material))
	for v := range material {
		values = append(values, v)
	}
	sort.Strings(values)
	for _, v := range values {
		if len(v) < minRedactedMaterial || !f.set.Add(v, material[v]) {
			continue
		}
		if len(v) > maxReprNeedle {
			continue // no text SESSION-REDACTION hunts is that long (reprs are cut at 4 KiB, output at 64 KiB)
		}
		if r := pyBytesReprBody([]byte(v)); r != v && len(r) >= secrets.MinLength {
			f.extra = append(f.extra, materialNeedle{text: r, origin: material[v]})
		}
	}
	return f
}

// find returns the origin and encoding of the first material found in text.
func (f *materialFinder) find(text string) (origin, encoding string, ok bool) {
	if text == "" {
		return "", "", false
	}
	if m := f.set.FindString(text); len(m) > 0 {
		return m[0].Origin, m[0].Encoding, true
	}
	for _, n := range f.extra {
		if strings.Contains(text, n.text) {
			return n.origin, "Python bytes repr", true
		}
	}
	return "", "", false
}

// pyBytesReprBody is what Python's repr() shows between the quotes of a bytes value.
func pyBytesReprBody(b []byte) string {
	quote := byte('\'')
	if strings.IndexByte(string(b), '\'') >= 0 && strings.IndexByte(string(b), '"') < 0 {
		quote = '"'
	}
	var sb strings.Builder
	for _, c := range b {
		switch {
		case c == '\\':
			sb.WriteString(`\\`)
		case c == quote:
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c == '\t':
			sb.WriteString(`\t`)
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\r':
			sb.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&sb, `\x%02x`, c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func decideSessionRedaction(ev *Evidence) []Finding {
	if len(ev.Material) == 0 {
		return nil
	}
	finder := newMaterialFinder(ev.Material)
	var out []Finding
	seen := map[string]bool{}
	report1 := func(cs callSite, where, origin, encoding string, loc *report.Location) {
		key := string(cs.c.Method) + "|" + where
		if seen[key] {
			return
		}
		seen[key] = true
		msg := fmt.Sprintf("the %s of %s shows returned material: %s (%s)", where, cs.c.Method, origin, encoding)
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
	}
	for _, cs := range ev.calls() {
		if r := cs.c.Result; r != nil && cs.c.Outcome != simulate.OutcomeDied {
			if origin, enc, ok := finder.find(r.Repr); ok {
				report1(cs, "repr of the returned "+r.Name(), origin, enc, ev.methodLocation(cs.c.Method))
			}
		}
		if e := cs.c.Error; e != nil {
			parts := []struct{ where, text string }{
				{"message", e.Message}, {"repr", e.Repr}, {"traceback", e.Traceback},
			}
			for _, p := range parts {
				if origin, enc, ok := finder.find(p.text); ok {
					report1(cs, e.Type+" "+p.where, origin, enc, ev.errorLocation(cs))
					break
				}
			}
		}
	}
	return out
}

func decideSessionEnvReserved(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, cs := range ev.calls(sessionMaterialMethods...) {
		m := cs.materials()
		if m == nil {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(m.Environment)) {
			if !simulate.IsPlatformOwnedEnv(k) {
				continue
			}
			key := string(cs.c.Method) + "|" + k
			if seen[key] {
				continue
			}
			seen[key] = true
			loc := ev.methodLocation(cs.c.Method)
			msg := fmt.Sprintf("%s returned the platform-owned environment name %s (%s)", cs.c.Method, shortName(k), sessionLabel(cs.c))
			out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
		}
	}
	return out
}

// A credential the double issued is known by its kind (secrets.KindCredential, see simulate.History.Secrets); a
// workload identity token by its value: prepare_session's typed context carries it with its Session.

// principalToken is a value that belongs to one principal: a credential the double issued for them or the
// workload identity token of one of their Sessions.
type principalToken struct {
	value string
	owner string // principal, "" until known
	what  string
}

// principalTokens lists a history's per-principal tokens with their owners where the history tells them.
func principalTokens(h *simulate.History) []*principalToken {
	sessionOwner := map[string]string{}
	sessionPrincipals := map[string]bool{}
	widSession := map[string]string{} // workload identity token -> the Session whose context carried it
	for _, c := range h.Calls() {
		if c.Ctx.Session != "" && c.Ctx.Principal != "" {
			sessionOwner[c.Ctx.Session] = c.Ctx.Principal
			sessionPrincipals[c.Ctx.Principal] = true
		}
		if c.Method == simulate.CallPrepareSession {
			if ctx := callContext(c); ctx.WorkloadIdentity != nil && ctx.WorkloadIdentity.Token != "" {
				widSession[ctx.WorkloadIdentity.Token] = ctx.SessionID
			}
		}
	}
	// The double issues one credential per applied POST /v1/credentials, in apply order.
	var issues []simulate.Request
	for _, r := range h.Requests {
		if r.Applied && strings.EqualFold(r.Method, "POST") && strings.TrimRight(r.Path, "/") == "/v1/credentials" {
			issues = append(issues, r)
		}
	}
	sort.SliceStable(issues, func(i, j int) bool { return issues[i].ApplyOrder < issues[j].ApplyOrder })
	var creds []*principalToken
	var out []*principalToken
	for _, s := range h.Secrets {
		switch {
		case s.Kind == secrets.KindCredential:
			t := &principalToken{value: s.Value, what: "a credential issued"}
			creds = append(creds, t)
			out = append(out, t)
		case widSession[s.Value] != "":
			session := widSession[s.Value]
			out = append(out, &principalToken{value: s.Value, owner: sessionOwner[session], what: "the workload identity token of session " + session})
		}
	}
	if len(creds) != len(issues) {
		return out // owners unknown: the first Session that receives a credential is taken as its owner
	}
	drop := map[*principalToken]bool{}
	for i, t := range creds {
		t.owner = requestPrincipal(issues[i])
		// A credential issued for no Session's principal (an Agent or service identity) is not one
		// principal's material, so sharing it is not this clause's concern.
		drop[t] = !sessionPrincipals[t.owner]
	}
	var kept []*principalToken
	for _, t := range out {
		if !drop[t] {
			kept = append(kept, t)
		}
	}
	return kept
}

// requestPrincipal is the principal_id of a credential request's JSON body, or "".
func requestPrincipal(r simulate.Request) string {
	body := r.RawBody()
	if len(body) == 0 {
		body = r.Body
	}
	var v struct {
		PrincipalID string `json:"principal_id"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return v.PrincipalID
}

// sessionText is one piece of material a Session received.
type sessionText struct {
	cs    callSite
	where string
	text  string
}

// sessionTexts lists, in history order, the material each Session call returned and what it wrote into the
// sandbox through its handle.
func sessionTexts(ev *Evidence, h *simulate.History) []sessionText {
	byKey := map[string]callSite{}
	for _, e := range h.Events {
		if c := e.Call; c != nil && slices.Contains(sessionMaterialMethods, c.Method) {
			byKey[c.Key] = callSite{h: h, c: c, e: e}
		}
	}
	var out []sessionText
	for _, e := range h.Events {
		if op := e.Sandbox; op != nil && op.Op == harness.OpWriteFile && len(op.Content()) > 0 {
			if cs, ok := byKey[op.Call]; ok {
				out = append(out, sessionText{cs, "sandbox file " + op.Path, ev.texts.str(op.Content())})
			}
			continue
		}
		c := e.Call
		if c == nil || !slices.Contains(sessionMaterialMethods, c.Method) {
			continue
		}
		cs := byKey[c.Key]
		m := cs.materials()
		if m == nil {
			continue
		}
		for _, f := range m.Files {
			out = append(out, sessionText{cs, "file " + f.Name, ev.texts.str(f.Content)})
		}
		for _, k := range slices.Sorted(maps.Keys(m.Environment)) {
			out = append(out, sessionText{cs, "environment value " + k, m.Environment[k]})
		}
	}
	return out
}

// exCrossSession needs material returned to Sessions of two principals in one scenario.
func exCrossSession(ev *Evidence) Exercise {
	t := newTally(callNoun(judgesMaterials...))
	met := 0
	for _, h := range ev.Histories {
		principals := map[string]bool{}
		for _, cs := range ev.callsIn(h, judgesMaterials...) {
			if cs.materials() != nil && cs.c.Ctx.Principal != "" {
				principals[cs.c.Ctx.Principal] = true
				t.add(cs)
			}
		}
		if len(principals) >= 2 {
			met++
			t.mark("scenarios with two or more principals")
		}
	}
	return need{reach: "a scenario with Sessions of two principals on one Agent reaches it"}.result(t, met)
}

func decideLeakCrossSession(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		tokens := principalTokens(h)
		if len(tokens) == 0 {
			continue
		}
		// The set numbers the tokens it adds (Match.ID); a value already added (the same token twice) keeps
		// the first token's number.
		set := &secrets.Set{}
		var byID []*principalToken
		for _, t := range tokens {
			if set.AddSecret(secrets.Secret{Value: t.value, Origin: t.what}) {
				byID = append(byID, t)
			}
		}
		for _, st := range sessionTexts(ev, h) {
			receiver := st.cs.c.Ctx.Principal
			if receiver == "" {
				continue
			}
			for _, m := range set.FindString(st.text) {
				if m.ID < 0 || m.ID >= len(byID) {
					continue
				}
				t := byID[m.ID]
				if t.owner == "" {
					t.owner = receiver // first seen: the receiver is taken as its owner
					continue
				}
				if t.owner == receiver {
					continue
				}
				key := h.Scenario + "|" + st.cs.c.Ctx.Session + "|" + t.owner
				if seen[key] {
					continue
				}
				seen[key] = true
				loc := ev.methodLocation(st.cs.c.Method)
				msg := fmt.Sprintf("%s for principal %s's session %s returned %s, which holds %s for principal %s (%s)",
					st.cs.c.Method, receiver, st.cs.c.Ctx.Session, st.where, t.what, t.owner, m.Encoding)
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(st.cs, msg, loc)}})
			}
		}
	}
	return out
}

// exWrapper is met when the project's image wrapper was run with every probe.
func exWrapper(ev *Evidence) Exercise {
	if ev.Wrapper == nil {
		return Exercise{Missing: "no image wrapper was checked; name it with image-wrapper in [tool.astrabox]"}
	}
	return Exercise{Met: true, Over: fmt.Sprintf("%d probes of the image wrapper %s", len(ev.Wrapper.Probes), filepath.Base(ev.Wrapper.Wrapper))}
}

// decideSessionCLIProbe fails each probe of the project's image wrapper that did not hold, at the wrapper
// file, or the wrapper itself when it could not be run at all.
func decideSessionCLIProbe(ev *Evidence) []Finding {
	if ev.WrapperUnusable != "" {
		return []Finding{{Message: "the image wrapper cannot be run: " + ev.WrapperUnusable}}
	}
	if ev.Wrapper == nil {
		return nil
	}
	loc := &report.Location{Path: ev.Wrapper.Wrapper, Line: 1}
	var out []Finding
	for _, p := range ev.Wrapper.Probes {
		if p.Passed {
			continue
		}
		msg := fmt.Sprintf("the image wrapper %s: `%s` (%s): %s", filepath.Base(ev.Wrapper.Wrapper), p.Command(), p.Expect, p.Summary)
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{{Text: msg, Location: loc}}})
	}
	return out
}
