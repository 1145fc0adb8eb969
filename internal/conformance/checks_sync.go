package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/services"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// This file holds the checks of synchronize (SYNC-*); checks_recover.go holds RECOVER-*, checks_box.go the
// checks about what a provider leaves inside a box (LEAK-INVENTORY, IMAGE-NO-RETROFIT).

// judgesSync lists the callbacks the synchronize checks judge.
var judgesSync = []simulate.Callback{simulate.CallSynchronize}

func init() {
	register(
		&Check{
			ID: "SYNC-IDENTITY", Title: "External identity is keyed by Agent ID", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"SYNC-IDENTITY"},
			Needs:   "synchronize writes of one Agent for two boxes or versions", Exercise: exSyncIdentity, Judges: judgesSync,
			Rationale: "synchronize runs once per prepared box, for every Agent version and every pool member. The external record it maintains must be one per Agent: keying it by the configuration version, preparation, operation, runtime generation or sandbox creates a new external identity each time, leaves stale copies behind and defeats the compare-and-set that serializes replicas.",
			Hint:      "Build record keys from context.operation.agent_id only; keep the version and operation inside the record's value.",
			Wrong:     "key = \"agents/%s-v%d\" % (context.operation.agent_id, context.config_version)\nawait client.put(\"/v1/records/\" + key, {\"value\": spec})",
			Right:     "key = \"agents/%s\" % context.operation.agent_id\nawait client.put(\"/v1/records/\" + key, {\"value\": {\"spec\": spec, \"config_version\": context.config_version}})",
			Decide:    decideSyncIdentity,
		},
		&Check{
			ID: "SYNC-SKIP-UNCHANGED", Title: "Unchanged inputs cause no external write", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"SYNC-SKIP-UNCHANGED"},
			Needs:   "a synchronize whose inputs were unchanged since a successful one", Exercise: exSyncUnchanged, Judges: judgesSync,
			Rationale: "Every prepared box of an Agent version is synchronized with the same inputs. A provider that writes on every call turns each prewarmed box into an external write, races the other pool members for nothing and bumps record versions that other replicas compare against. When the inputs equal those of an earlier successful synchronize, the external state is already right and nothing must be written.",
			Hint:      "Read the current record first and write only when it differs from what you would write.",
			Wrong:     "await client.put(path, {\"value\": spec})  # every time",
			Right:     "version, current = await read(path)\nif current != spec:\n    await client.put(path, {\"value\": spec}, if_match=version)",
			Decide:    decideSyncSkipUnchanged,
		},
		&Check{
			ID: "SYNC-NO-LOG-CONFIG", Title: "Trusted configuration is never logged", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"SYNC-NO-LOG-CONFIG"},
			Needs:   "a call of a callback the provider defines", Exercise: exAnyCall, Judges: judgesAll,
			Rationale: "The resolved Agent configuration (instructions, display name, deployment settings) is trusted input that operators did not agree to copy into logs; logs travel to places with weaker access control than the configuration store. Log identifiers and counts, never configuration values.",
			Hint:      "Log agent_id, operation_id and counts; never a value taken from context.config.",
			Wrong:     "logger.info(\"synchronizing with instructions %s\", context.config[\"agent\"][\"instructions\"])",
			Right:     "logger.info(\"synchronize agent=%s operation=%s\", op.agent_id, op.operation_id)",
			Decide:    decideSyncNoLogConfig,
		},
		&Check{
			ID: "SYNC-QUIESCENT", Title: "A successful synchronize leaves no outstanding write", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"SYNC-QUIESCENT"},
			Needs:   "a synchronize that returned", Exercise: exSyncReturned, Judges: judgesSync,
			Rationale: "When synchronize returns, the platform publishes the box and may run the next synchronize of the Agent elsewhere. A write still in flight (a thread, a task, a timer) lands after the platform believes the Agent is synchronized, can overwrite a newer version, and cannot be fenced by recover because the operation is already done.",
			Hint:      "Await every request before returning; do not hand writes to threads, tasks or timers.",
			Wrong:     "threading.Thread(target=lambda: client.put_blocking(path, body)).start()\nreturn",
			Right:     "await client.put(path, body)  # completed before synchronize returns",
			Decide:    decideSyncQuiescent,
		},
	)
}

// ---------------------------------------------------------------------------------------------------------
// helpers

// operationID is the operation id a synchronize or recover call was about ("" for other callbacks).
func operationID(c *simulate.CallRecord) string {
	op, err := c.Operation()
	if err != nil {
		panic("conformance: " + err.Error()) // see callContext
	}
	if op == nil {
		return ""
	}
	return op.OperationID
}

// writesOf returns the write requests that belong to a call: those carrying the call's operation id, and
// those attributed to the call that carry no operation id (a request attributed to the call but naming another
// operation was sent by that other operation's leftover work).
func writesOf(cs callSite) []simulate.Request {
	opID := operationID(cs.c)
	var out []simulate.Request
	for _, r := range cs.h.Requests {
		if !r.Class.Write {
			continue
		}
		switch {
		case opID != "" && r.Operation == opID:
			out = append(out, r)
		case r.Call == cs.c.Key && (r.Operation == "" || opID == ""):
			out = append(out, r)
		}
	}
	return out
}

// stateWrite tells whether an applied request changed deployment state that synchronize maintains (records,
// fences, registrations, the provider's own services' resources), as opposed to issuing a credential or
// re-checking consent at the double.
func stateWrite(r simulate.Request) bool {
	if !r.Applied || !r.Class.Write {
		return false
	}
	if r.Service != "" {
		return true
	}
	if strings.HasPrefix(r.Path, "/v1/credentials") {
		return false
	}
	if strings.HasPrefix(r.Path, "/v1/consents/") && strings.HasSuffix(r.Path, "/check") {
		return false
	}
	return true
}

// resourceKey is the external identity a write acts on, from its classification (Class.Resource): the
// record key of the double's /v1/records/, and for a declared service its name and the resource ("vault
// /v1/secret/data/agents/agent-1", "secrets agents/agent-1"); "" when the write names no resource.
func resourceKey(r simulate.Request) string {
	if r.Class.Resource == "" {
		return ""
	}
	if r.Service == "" {
		return r.Class.Resource
	}
	return r.Service + " " + r.Class.Resource
}

// adds tells whether a write may add to a collection rather than replace one resource (a REST POST): two
// Agents posting to one collection share no identity.
func adds(r simulate.Request) bool {
	return r.Class.Protocol == services.ProtocolREST && strings.EqualFold(r.Method, "POST")
}

// containsToken reports whether s holds tok not glued to further letters or digits on either side.
func containsToken(s, tok string) bool {
	if tok == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(s[from:], tok)
		if i < 0 {
			return false
		}
		i += from
		j := i + len(tok)
		if (i == 0 || !isAlnum(s[i-1])) && (j == len(s) || !isAlnum(s[j])) {
			return true
		}
		from = i + 1
	}
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

var digitRun = regexp.MustCompile(`[0-9]+|[^0-9]+`)

// versionedPair reports whether two record keys written for two Agent versions are the same key with only
// the version number swapped: every piece that differs is a digit run equal to the respective version.
func versionedPair(a string, va int, b string, vb int) bool {
	if a == b || va == vb {
		return false
	}
	pa, pb := digitRun.FindAllString(a, -1), digitRun.FindAllString(b, -1)
	if len(pa) != len(pb) {
		return false
	}
	na, nb := strconv.Itoa(va), strconv.Itoa(vb)
	differ := false
	for i := range pa {
		if pa[i] == pb[i] {
			continue
		}
		if strings.TrimLeft(pa[i], "0") != na || strings.TrimLeft(pb[i], "0") != nb {
			return false
		}
		differ = true
	}
	return differ
}

// perBoxIdentifiers are the context fields of synchronize that change between versions, pool members or calls
// and therefore must never name an external record; the values are the call's.
func perBoxIdentifiers(c *simulate.CallRecord) [][2]string {
	ctx := callContext(c)
	var out [][2]string
	add := func(name string, s string) {
		if len(s) >= 4 {
			out = append(out, [2]string{name, s})
		}
	}
	add("operation_id", operationID(c))
	add("preparation_id", ctx.PreparationID)
	add("runtime_generation", ctx.RuntimeGeneration)
	if ctx.Sandbox != nil {
		add("sandbox id", ctx.Sandbox.SandboxID)
	}
	if c.Ctx.SandboxID != "" {
		add("sandbox id", c.Ctx.SandboxID)
	}
	return out
}

// callOf finds the call record with a key in a history.
func callOf(h *simulate.History, key string) (callSite, bool) {
	for _, e := range h.Events {
		if e.Call != nil && e.Call.Key == key {
			return callSite{h: h, c: e.Call, e: e}, true
		}
	}
	return callSite{}, false
}

// ---------------------------------------------------------------------------------------------------------
// SYNC-IDENTITY

type keyedWrite struct {
	cs      callSite
	key     string
	version int
	// adds reports that every write under key was a POST that may add to a shared collection.
	adds bool
}

// exSyncIdentity needs synchronize calls of one Agent for two boxes or versions that wrote.
func exSyncIdentity(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallSynchronize))
	met, wrote := 0, 0
	for _, h := range ev.Histories {
		contexts := map[string]map[string]bool{} // agent -> version|sandbox of its synchronize calls
		writers := map[string]bool{}             // agents whose synchronize wrote
		for _, cs := range ev.callsIn(h, simulate.CallSynchronize) {
			a := cs.c.Ctx.Agent
			if contexts[a] == nil {
				contexts[a] = map[string]bool{}
			}
			contexts[a][fmt.Sprintf("%d|%s", cs.c.Ctx.Version, cs.c.Ctx.SandboxID)] = true
			label := ""
			if len(writesOf(cs)) > 0 {
				label, writers[a] = "wrote", true
				wrote++
			}
			t.add(cs, label)
		}
		for a := range writers {
			if len(contexts[a]) >= 2 {
				met++
			}
		}
	}
	if wrote == 0 && t.calls > 0 {
		return Exercise{Tally: t.report(), NotApplicable: "synchronize made no external write: the provider keeps no external identity to judge"}
	}
	return need{reach: "an Agent whose synchronize writes, prewarmed into two or more boxes or at two versions, reaches it"}.result(t, met)
}

func decideSyncIdentity(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		byAgent := map[string][]keyedWrite{}
		var agents []string
		for _, cs := range ev.calls(simulate.CallSynchronize) {
			if cs.h != h {
				continue
			}
			loc := ev.methodLocation(simulate.CallSynchronize)
			keys := map[string]bool{} // resource key -> every write to it adds to a collection
			for _, r := range writesOf(cs) {
				if k := resourceKey(r); k != "" {
					prev, ok := keys[k]
					keys[k] = adds(r) && (!ok || prev)
				}
			}
			for _, k := range sortedSet(keys) {
				for _, id := range perBoxIdentifiers(cs.c) {
					if !containsToken(k, id[1]) {
						continue
					}
					tag := "id:" + string(cs.c.Method) + id[0] + k
					if seen[tag] {
						continue
					}
					seen[tag] = true
					msg := fmt.Sprintf("synchronize wrote the external record %q, whose key embeds the %s of the call; the record must be keyed by the Agent ID alone", k, id[0])
					out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
				}
				a := cs.c.Ctx.Agent
				if _, ok := byAgent[a]; !ok {
					agents = append(agents, a)
				}
				byAgent[a] = append(byAgent[a], keyedWrite{cs: cs, key: k, version: cs.c.Ctx.Version, adds: keys[k]})
			}
		}
		// Across Agent versions: the same key shape with the version number swapped means one record per
		// version.
		for _, a := range agents {
			ws := byAgent[a]
			reported := false
			for i := 0; i < len(ws) && !reported; i++ {
				for j := i + 1; j < len(ws) && !reported; j++ {
					x, y := ws[i], ws[j]
					if x.version <= 0 || y.version <= 0 {
						continue
					}
					if !versionedPair(x.key, x.version, y.key, y.version) {
						continue
					}
					reported = true
					loc := ev.methodLocation(simulate.CallSynchronize)
					msg := fmt.Sprintf("synchronize of agent %s wrote the external record %q for version %d and %q for version %d: one external identity per Agent version instead of one per Agent", a, x.key, x.version, y.key, y.version)
					out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(x.cs, fmt.Sprintf("version %d wrote %q", x.version, x.key), loc), ev.evidence(y.cs, fmt.Sprintf("version %d wrote %q", y.version, y.key), loc)}})
				}
			}
			if !reported && len(out) == 0 {
				if f, ok := ev.disjointKeys(a, ws); ok {
					out = append(out, f)
				}
			}
		}
		if f, ok := ev.sharedAcrossAgents(agents, byAgent); ok {
			out = append(out, f)
		}
	}
	return out
}

// sharedAcrossAgents fails when synchronize of two different Agents wrote the same external record: the
// identity is keyed by something Agents share (their creator, say), not by the Agent ID.
func (ev *Evidence) sharedAcrossAgents(agents []string, byAgent map[string][]keyedWrite) (Finding, bool) {
	owner := map[string]keyedWrite{}
	for _, a := range agents {
		for _, w := range byAgent[a] {
			if w.adds {
				continue // a POST to a collection every Agent may add to
			}
			prev, ok := owner[w.key]
			if !ok {
				owner[w.key] = w
				continue
			}
			if prev.cs.c.Ctx.Agent == a {
				continue
			}
			loc := ev.methodLocation(simulate.CallSynchronize)
			msg := fmt.Sprintf("synchronize of agent %s and of agent %s both wrote the external record %q: one record for several Agents instead of one per Agent ID", prev.cs.c.Ctx.Agent, a, w.key)
			return Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(prev.cs, fmt.Sprintf("agent %s wrote %q", prev.cs.c.Ctx.Agent, w.key), loc), ev.evidence(w.cs, msg, loc)}}, true
		}
	}
	return Finding{}, false
}

// disjointKeys warns when two synchronize calls of one Agent both wrote records but no record in common: the
// external identity seems to move between calls for a reason the check cannot name. Records whose keys all
// name the Agent ID are one identity however many there are (an Agent and its package list, say).
func (ev *Evidence) disjointKeys(agent string, ws []keyedWrite) (Finding, bool) {
	named := true
	for _, w := range ws {
		named = named && containsToken(w.key, agent)
	}
	if named {
		return Finding{}, false
	}
	byCall := map[string]map[string]bool{}
	var order []callSite
	for _, w := range ws {
		if byCall[w.cs.c.Key] == nil {
			byCall[w.cs.c.Key] = map[string]bool{}
			order = append(order, w.cs)
		}
		byCall[w.cs.c.Key][w.key] = true
	}
	for i := 0; i < len(order); i++ {
		for j := i + 1; j < len(order); j++ {
			x, y := byCall[order[i].c.Key], byCall[order[j].c.Key]
			shared := false
			for k := range x {
				if y[k] {
					shared = true
					break
				}
			}
			if shared {
				continue
			}
			loc := ev.methodLocation(simulate.CallSynchronize)
			msg := fmt.Sprintf("two synchronize calls of agent %s wrote disjoint external records (%s wrote %s; %s wrote %s); one Agent should keep one external identity", agent, order[i].c.Key, strings.Join(sortedSet(x), ", "), order[j].c.Key, strings.Join(sortedSet(y), ", "))
			return Finding{Warning: true, Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(order[i], "wrote "+strings.Join(sortedSet(x), ", "), loc), ev.evidence(order[j], "wrote "+strings.Join(sortedSet(y), ", "), loc)}}, true
		}
	}
	return Finding{}, false
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---------------------------------------------------------------------------------------------------------
// SYNC-SKIP-UNCHANGED

// syncInputs is a canonical form of what synchronize was given, minus what legitimately differs between
// boxes of one Agent version (the operation and the sandbox).
func syncInputs(c *simulate.CallRecord) string {
	ctx := callContext(c)
	ctx.Operation, ctx.Sandbox = nil, nil
	b, err := json.Marshal(struct {
		Agent string `json:"agent"`
		simulate.ContextArg
	}{c.Ctx.Agent, ctx})
	if err != nil {
		return ""
	}
	return string(b)
}

// exSyncUnchanged needs a synchronize whose inputs equal those of an earlier successful one.
func exSyncUnchanged(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallSynchronize))
	met := 0
	for _, h := range ev.Histories {
		base := map[string]bool{}
		for _, cs := range ev.callsIn(h, simulate.CallSynchronize) {
			in := syncInputs(cs.c)
			label := ""
			if in != "" && base[in] {
				met++
				label = "with inputs unchanged since a successful synchronize"
			}
			if in != "" && cs.c.Outcome == simulate.OutcomeReturned && len(syncLateWrites(cs)) == 0 {
				base[in] = true
			}
			t.add(cs, label)
		}
	}
	return need{reach: "a second synchronize of the same Agent version and inputs (a prewarm of more boxes) reaches it"}.result(t, met)
}

func decideSyncSkipUnchanged(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		baseline := map[string]callSite{}
		keyed := map[string]map[string]bool{} // inputs -> the keys the writes of calls with them carried
		for _, cs := range ev.calls(simulate.CallSynchronize) {
			if cs.h != h {
				continue
			}
			in := syncInputs(cs.c)
			if in == "" {
				continue
			}
			if keyed[in] == nil {
				keyed[in] = map[string]bool{}
			}
			if prev, ok := baseline[in]; ok {
				var writes []string
				for _, r := range writesOf(cs) {
					// A write with the key of an earlier one (with the same inputs) is that write again.
					if stateWrite(r) && !keyedBefore(keyed[in], r) {
						writes = append(writes, describeRequest(r))
					}
				}
				if len(writes) > 0 {
					loc := ev.methodLocation(simulate.CallSynchronize)
					msg := fmt.Sprintf("synchronize of agent %s (version %d) made %d external write(s) although its inputs equal those of the earlier successful synchronize %s: %s", cs.c.Ctx.Agent, cs.c.Ctx.Version, len(writes), prev.c.Key, strings.Join(writes, "; "))
					out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(prev, "earlier synchronize with the same inputs returned", loc), ev.evidence(cs, msg, loc)}})
					break // one finding per history is enough
				}
			}
			for _, r := range writesOf(cs) {
				keyedBefore(keyed[in], r)
			}
			// Only a successful, quiescent call is a baseline: when its writes were still in flight, a later
			// call could not have seen them (that is SYNC-QUIESCENT's finding).
			if cs.c.Outcome == simulate.OutcomeReturned && len(syncLateWrites(cs)) == 0 {
				if _, ok := baseline[in]; !ok {
					baseline[in] = cs
				}
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------------
// SYNC-NO-LOG-CONFIG

// syncLateWrites returns the writes of a call its work issued after the callback's code had ended (a harness
// fact, wherever they landed) or that were applied after the platform took its reply.
func syncLateWrites(cs callSite) []simulate.Request {
	var out []simulate.Request
	for _, r := range writesOf(cs) {
		if r.Applied && (r.ApplyOrder > cs.c.ApplyMark || (r.Call == cs.c.Key && r.Issuer != nil && r.Issuer.AfterEnd)) {
			out = append(out, r)
		}
	}
	return out
}

// leftoverSummary describes the work a call left running, or "".
func leftoverSummary(l harness.Leftovers) (string, *report.Location) {
	var parts []string
	var loc *report.Location
	for _, t := range l.Threads {
		parts = append(parts, fmt.Sprintf("thread %q", t.Name))
		if loc == nil {
			loc = at(t.File, t.Line)
		}
	}
	for _, t := range l.Tasks {
		parts = append(parts, fmt.Sprintf("task %q", t.Name))
		if loc == nil {
			loc = at(t.File, t.Line)
		}
	}
	for _, t := range l.Timers {
		parts = append(parts, fmt.Sprintf("timer %s", t.Callback))
	}
	for _, c := range l.Children {
		parts = append(parts, fmt.Sprintf("child process %d", c.PID))
	}
	return strings.Join(parts, ", "), loc
}

// exSyncReturned needs a synchronize that returned.
var exSyncReturned = needCalls(need{calls: judgesSync, label: "that returned",
	met:   func(_ *Evidence, cs callSite) bool { return cs.c.Outcome == simulate.OutcomeReturned },
	reach: "a prewarm step without faults reaches it"})

func decideSyncQuiescent(ev *Evidence) []Finding {
	var out []Finding
	for _, cs := range ev.calls(simulate.CallSynchronize) {
		if cs.c.Outcome != simulate.OutcomeReturned {
			continue
		}
		late := syncLateWrites(cs)
		left, lloc := leftoverSummary(cs.c.Observations.Leftovers)
		loc := lloc
		if loc == nil {
			loc = ev.methodLocation(simulate.CallSynchronize)
		}
		if len(late) > 0 {
			var ds []string
			for _, r := range late {
				ds = append(ds, describeRequest(r))
			}
			msg := fmt.Sprintf("synchronize %s returned successfully, then %d of its write(s) landed at the deployment: %s", cs.c.Key, len(late), strings.Join(ds, "; "))
			if left != "" {
				msg += "; it had left behind " + left
			}
			out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
			continue
		}
		if left != "" {
			msg := fmt.Sprintf("synchronize %s returned with work still running (%s); no late write was seen, but such work can write after the platform published the box", cs.c.Key, left)
			out = append(out, Finding{Warning: true, Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------------
// RECOVER-*
