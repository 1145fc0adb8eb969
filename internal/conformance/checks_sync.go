package conformance

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// This file holds the checks of synchronize and recover (SYNC-*, RECOVER-*), and the two checks about what a
// provider leaves inside a box before any Session claims it (LEAK-INVENTORY, IMAGE-NO-RETROFIT).

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
		&Check{
			ID: "RECOVER-TRUTH", Title: "recover returns True only once the operation can never write", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"RECOVER-TRUTH"},
			Needs:   "a recover call for an unresolved operation that returned an answer", Exercise: exRecover, Judges: judgesRecover,
			Rationale: "True tells the platform that the unresolved operation is over for good, so it may start a new one. If a delayed request of that operation can still land, it overwrites the newer operation's state. An absent remote result or an expired lease proves nothing: the request may simply not have arrived yet. Only a durable fence (or an equivalent guarantee) does.",
			Hint:      "Fence operation.operation_id at the deployment and return True only when the fence is confirmed.",
			Wrong:     "version, value = await read(path)\nreturn value is None or value[\"written_by\"] != operation.operation_id",
			Right:     "answer = await client.post(\"/v1/fences\", {\"agent_id\": op.agent_id, \"operation_id\": op.operation_id})\nreturn answer.status == 200 and answer.body[\"fenced\"] == op.operation_id",
			Decide:    decideRecoverTruth,
		},
		&Check{
			ID: "RECOVER-IDEMPOTENT", Title: "recover is idempotent", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"RECOVER-IDEMPOTENT"},
			Needs:   "two recover calls for one operation", Exercise: exRecoverTwice, Judges: judgesRecover,
			Rationale: "The platform may ask recover about the same operation several times, from different replicas, for example after losing the first answer. Once an operation is known to be quiescent it stays quiescent; answering False later contradicts the earlier True and leaves the operation stuck until its deadline.",
			Hint:      "Make recover's answer depend only on durable facts (the fence), so that asking again gives the same answer.",
			Wrong:     "answer = await client.put(\"/v1/records/recoveries/\" + op.operation_id, {}, if_match=0)\nreturn answer.status == 200  # False the second time",
			Right:     "answer = await client.post(\"/v1/fences\", {\"agent_id\": op.agent_id, \"operation_id\": op.operation_id})\nreturn answer.status == 200",
			Decide:    decideRecoverIdempotent,
		},
		&Check{
			ID: "RECOVER-NO-FENCE-NEWER", Title: "recover fences only its own operation", Area: AreaSync, Severity: report.SeverityError,
			Clauses: []string{"RECOVER-NO-FENCE-NEWER"},
			Needs:   "a recover call for an unresolved operation that returned an answer", Exercise: exRecover, Judges: judgesRecover,
			Rationale: "recover is asked about one operation. Fencing anything else (the operation that last wrote the record, the newest one this process saw) refuses the writes of a newer, healthy operation, which then fails or stays unresolved although nothing was wrong with it.",
			Hint:      "Post a fence naming operation.operation_id and nothing else.",
			Wrong:     "for op_id in {operation.operation_id, record[\"written_by\"]}:\n    await client.post(\"/v1/fences\", {\"agent_id\": a, \"operation_id\": op_id})",
			Right:     "await client.post(\"/v1/fences\", {\"agent_id\": operation.agent_id, \"operation_id\": operation.operation_id})",
			Decide:    decideRecoverNoFenceNewer,
		},
		&Check{
			ID: "LEAK-INVENTORY", Title: "No secret in unclaimed inventory", Area: AreaLeak, Severity: report.SeverityError,
			Clauses: []string{"LEAK-INVENTORY"},
			Needs:   "unclaimed inventory left by a prewarm", Exercise: exInventory, Judges: judgesBox,
			Rationale: "A prewarmed box waits in inventory before any Session claims it, and may be claimed by any principal or discarded and inspected. Session material, model credentials and environment credentials written there are exposed to whoever gets the box; they must be resolved at claim time, not during synchronize.",
			Hint:      "Write no credential into the sandbox during synchronize; return credentials as Session material from prepare_session instead.",
			Wrong:     "await context.sandbox.write_file(home + \"/.config/model-key\", config[\"secrets\"][\"model_api_key\"].encode())",
			Right:     "# synchronize writes nothing secret; prepare_session returns the key as RuntimeMaterials",
			Decide:    decideLeakInventory,
		},
		&Check{
			ID: "IMAGE-NO-RETROFIT", Title: "No wrapper retrofitted into the box", Area: AreaGeneral, Severity: report.SeverityError,
			Clauses: []string{"IMAGE-NO-RETROFIT"},
			Needs:   "a callback that had a sandbox handle", Exercise: exBox, Judges: judgesBox,
			Rationale: "System services and wrappers must be baked into the selected image, where they are reviewed and versioned. A provider that writes an executable into the box, or writes into a directory on the image's PATH, retrofits a wrapper that shadows or replaces the image's own commands and defers its entrypoint.",
			Hint:      "Write only data files (no execute bit) outside the image's PATH; bake wrappers into the image.",
			Wrong:     "await sandbox.write_file(home + \"/bin/claude\", WRAPPER, mode=0o755)",
			Right:     "await sandbox.write_file(home + \"/.config/app/settings.json\", data, mode=0o600)",
			Decide:    decideImageNoRetrofit,
		},
	)
}

// ---------------------------------------------------------------------------------------------------------
// helpers

// syncContext is the context argument of a synchronize call, or nil.
func syncContext(c *simulate.CallRecord) map[string]any {
	m, _ := c.Args["context"].(map[string]any)
	return m
}

// operationID is the operation id a synchronize or recover call was about.
func operationID(c *simulate.CallRecord) string {
	var op map[string]any
	switch c.Method {
	case simulate.CallSynchronize:
		if ctx := syncContext(c); ctx != nil {
			op, _ = ctx["operation"].(map[string]any)
		}
	case simulate.CallRecover:
		op, _ = c.Args["operation"].(map[string]any)
	}
	s, _ := op["operation_id"].(string)
	return s
}

// writesOf returns the write requests that belong to a call: those carrying the call's operation id, and
// those attributed to the call that carry no operation id (a request attributed to the call but naming another
// operation was sent by that other operation's leftover work).
func writesOf(cs callSite) []simulate.Request {
	opID := operationID(cs.c)
	var out []simulate.Request
	for _, r := range cs.h.Requests {
		if !isWrite(r.Method) {
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
// fences, registrations), as opposed to issuing a credential or re-checking consent.
func stateWrite(r simulate.Request) bool {
	if !r.Applied || !isWrite(r.Method) {
		return false
	}
	if strings.HasPrefix(r.Path, "/v1/credentials") {
		return false
	}
	if strings.HasPrefix(r.Path, "/v1/consents/") && strings.HasSuffix(r.Path, "/check") {
		return false
	}
	return true
}

// recordKey returns the decoded record key of a /v1/records/ request, or "".
func recordKey(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	const prefix = "/v1/records/"
	if !strings.HasPrefix(p, prefix) {
		return ""
	}
	k := strings.TrimPrefix(p, prefix)
	if d, err := url.PathUnescape(k); err == nil {
		k = d
	}
	return k
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
	ctx := syncContext(c)
	var out [][2]string
	add := func(name string, v any) {
		if s, ok := v.(string); ok && len(s) >= 4 {
			out = append(out, [2]string{name, s})
		}
	}
	add("operation_id", operationID(c))
	if ctx != nil {
		add("preparation_id", ctx["preparation_id"])
		add("runtime_generation", ctx["runtime_generation"])
		if sb, ok := ctx["sandbox"].(map[string]any); ok {
			add("sandbox id", sb["sandbox_id"])
		}
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
			keys := map[string]bool{}
			for _, r := range writesOf(cs) {
				if k := recordKey(r.Path); k != "" {
					keys[k] = true
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
				byAgent[a] = append(byAgent[a], keyedWrite{cs: cs, key: k, version: cs.c.Ctx.Version})
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
	ctx := syncContext(c)
	if ctx == nil {
		return ""
	}
	in := map[string]any{"agent": c.Ctx.Agent}
	for k, v := range ctx {
		if k == "operation" || k == "sandbox" {
			continue
		}
		in[k] = v
	}
	b, err := json.Marshal(in)
	if err != nil {
		return ""
	}
	return string(b)
}

func decideSyncSkipUnchanged(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		baseline := map[string]callSite{}
		for _, cs := range ev.calls(simulate.CallSynchronize) {
			if cs.h != h {
				continue
			}
			in := syncInputs(cs.c)
			if in == "" {
				continue
			}
			if prev, ok := baseline[in]; ok {
				var writes []string
				for _, r := range writesOf(cs) {
					if stateWrite(r) {
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

// configPath finds where in the configuration a string value sits ("agent.instructions").
func configPath(v any, want, prefix string) string {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if r := configPath(t[k], want, p); r != "" {
				return r
			}
		}
	case []any:
		for i, x := range t {
			if r := configPath(x, want, fmt.Sprintf("%s[%d]", prefix, i)); r != "" {
				return r
			}
		}
	case string:
		if t == want {
			return prefix
		}
	}
	return ""
}

// trustedIn returns the configuration path of the first trusted string in text (raw or JSON-escaped).
func (ev *Evidence) trustedIn(text string) string {
	if text == "" {
		return ""
	}
	for _, s := range ev.TrustedStrings {
		esc, _ := json.Marshal(s)
		if strings.Contains(text, s) || strings.Contains(text, strings.Trim(string(esc), `"`)) {
			if p := configPath(ev.Config, s, ""); p != "" {
				return p
			}
			return "a trusted configuration value"
		}
	}
	return ""
}

// configLeak is one place where trusted configuration was written out.
type configLeak struct {
	field, where string
	loc          *report.Location
}

// configLeaks scans observations for trusted configuration.
func (ev *Evidence) configLeaks(obs harness.Observations) []configLeak {
	var out []configLeak
	for _, l := range obs.Logs {
		text := l.Message
		if l.ExcText != nil {
			text += "\n" + *l.ExcText
		}
		if f := ev.trustedIn(text); f != "" {
			out = append(out, configLeak{f, fmt.Sprintf("a log record (level %s, logger %q)", l.Level, l.Logger), at(l.File, l.Line)})
		}
	}
	for _, w := range obs.Warnings {
		if f := ev.trustedIn(w.Message); f != "" {
			out = append(out, configLeak{f, "a " + w.Category + " warning", at(w.File, w.Line)})
		}
	}
	return out
}

func decideSyncNoLogConfig(ev *Evidence) []Finding {
	if len(ev.TrustedStrings) == 0 {
		return nil
	}
	var out []Finding
	seen := map[string]bool{}
	add := func(cs callSite, l configLeak) {
		tag := l.field + l.where
		if l.loc != nil {
			tag += fmt.Sprintf("%s:%d", l.loc.Path, l.loc.Line)
		}
		if seen[tag] {
			return
		}
		seen[tag] = true
		if l.loc == nil {
			l.loc = ev.methodLocation(cs.c.Method)
		}
		msg := fmt.Sprintf("%s wrote the trusted configuration field %s to %s", cs.c.Method, l.field, l.where)
		out = append(out, Finding{Message: msg, Location: l.loc, Evidence: []report.Evidence{ev.evidence(cs, msg, l.loc)}})
	}
	for _, cs := range ev.calls() {
		for _, l := range ev.configLeaks(ev.allObservations(cs)) {
			add(cs, l)
		}
		if f := ev.trustedIn(cs.c.Stdout); f != "" {
			add(cs, configLeak{field: f, where: "standard output"})
		}
		if f := ev.trustedIn(cs.c.Stderr); f != "" {
			add(cs, configLeak{field: f, where: "standard error"})
		}
	}
	// Observations reported after the last callback belong to no call; attribute them to the replica's last
	// call.
	for _, h := range ev.Histories {
		var last map[string]callSite = map[string]callSite{}
		for _, e := range h.Events {
			if e.Call != nil {
				last[e.Call.Replica] = callSite{h: h, c: e.Call, e: e}
				continue
			}
			if e.Kind != simulate.EventBackground || e.Background == nil {
				continue
			}
			if cs, ok := last[e.Replica]; ok {
				for _, l := range ev.configLeaks(*e.Background) {
					add(cs, l)
				}
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------------
// SYNC-QUIESCENT

// syncLateWrites returns the writes of a call applied after the call settled.
func syncLateWrites(cs callSite) []simulate.Request {
	var out []simulate.Request
	for _, r := range writesOf(cs) {
		if r.Applied && r.ApplyOrder > cs.c.ApplyMark {
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

// recovered reports whether a recover call answered True.
func recovered(cs callSite) bool {
	return cs.returned() && simulate.KindBool.Of(cs.c.Result) && cs.c.Result.Value
}

// answeredFalse reports whether a recover call returned False.
func answeredFalse(cs callSite) bool {
	return cs.returned() && simulate.KindBool.Of(cs.c.Result) && !cs.c.Result.Value
}

// synchronizeOf finds the synchronize call that ran an operation (by label) in the recover call's history.
func synchronizeOf(rc callSite) (callSite, bool) {
	for _, e := range rc.h.Events {
		if e.Call != nil && e.Call.Is(simulate.CallSynchronize) && e.Call.Ctx.Operation == rc.c.Ctx.Operation {
			return callSite{h: rc.h, c: e.Call, e: e}, true
		}
	}
	return callSite{}, false
}

func decideRecoverTruth(ev *Evidence) []Finding {
	var out []Finding
	done := map[string]bool{}
	for _, rc := range ev.calls(simulate.CallRecover) {
		if !recovered(rc) {
			continue
		}
		sc, ok := synchronizeOf(rc)
		if !ok {
			continue
		}
		tag := rc.h.Scenario + "/" + rc.c.Ctx.Operation
		if done[tag] {
			continue
		}
		var late []string
		for _, r := range writesOf(sc) {
			if r.Applied && r.ApplyOrder > rc.c.ApplyMark {
				late = append(late, describeRequest(r))
			}
		}
		if len(late) == 0 {
			continue
		}
		done[tag] = true
		loc := ev.methodLocation(simulate.CallRecover)
		msg := fmt.Sprintf("recover(%s) returned True, yet %d write(s) of that operation were applied afterwards: %s", rc.c.Ctx.Operation, len(late), strings.Join(late, "; "))
		out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(sc, "synchronize of the operation did not complete", ev.methodLocation(simulate.CallSynchronize)), ev.evidence(rc, msg, loc)}})
	}
	return out
}

func decideRecoverIdempotent(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		first := map[string]callSite{}
		reported := map[string]bool{}
		for _, rc := range ev.calls(simulate.CallRecover) {
			if rc.h != h {
				continue
			}
			op := rc.c.Ctx.Operation
			if recovered(rc) {
				if _, ok := first[op]; !ok {
					first[op] = rc
				}
				continue
			}
			prev, ok := first[op]
			if !ok || reported[op] {
				continue
			}
			loc := ev.methodLocation(simulate.CallRecover)
			switch {
			case answeredFalse(rc):
				reported[op] = true
				msg := fmt.Sprintf("recover(%s) answered True on replica %s (%s), then False on replica %s (%s)", op, prev.c.Replica, prev.c.Key, rc.c.Replica, rc.c.Key)
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(prev, "answered True", loc), ev.evidence(rc, msg, loc)}})
			case rc.c.Outcome == simulate.OutcomeRaised:
				reported[op] = true
				eloc := ev.errorLocation(rc)
				typ := "an exception"
				if rc.c.Error != nil {
					typ = rc.c.Error.Type
				}
				msg := fmt.Sprintf("recover(%s) answered True (%s), then raised %s when asked again (%s)", op, prev.c.Key, typ, rc.c.Key)
				out = append(out, Finding{Warning: true, Message: msg, Location: eloc, Evidence: []report.Evidence{ev.evidence(prev, "answered True", loc), ev.evidence(rc, msg, eloc)}})
			}
		}
	}
	return out
}

// fenceTarget returns the operation id a fence request names, or "".
func fenceTarget(r simulate.Request) string {
	if r.Method != "POST" || strings.TrimSuffix(r.Path, "/") != "/v1/fences" {
		return ""
	}
	body := r.RawBody()
	if len(body) == 0 {
		body = r.Body
	}
	var v struct {
		OperationID any `json:"operation_id"`
	}
	if json.Unmarshal(body, &v) != nil || v.OperationID == nil {
		return ""
	}
	return fmt.Sprint(v.OperationID)
}

func decideRecoverNoFenceNewer(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		labels := map[string]string{} // operation id -> label
		asked := map[string]bool{}    // operation ids recover was called for
		for _, c := range h.Calls() {
			if id := operationID(c); id != "" {
				if c.Is(simulate.CallSynchronize) {
					labels[id] = c.Ctx.Operation
				}
				if c.Is(simulate.CallRecover) {
					asked[id] = true
				}
			}
		}
		name := func(id string) string {
			if l, ok := labels[id]; ok {
				return l + " (" + id + ")"
			}
			return id
		}
		// Fences posted while recover ran must name the operation it was asked about.
		for _, rc := range ev.calls(simulate.CallRecover) {
			if rc.h != h {
				continue
			}
			own := operationID(rc.c)
			var others []string
			for _, r := range h.RequestsOf(rc.c.Key) {
				if t := fenceTarget(r); t != "" && t != own {
					others = append(others, name(t))
				}
			}
			if len(others) > 0 {
				loc := ev.methodLocation(simulate.CallRecover)
				msg := fmt.Sprintf("recover(%s) posted fence(s) for other operation(s): %s", rc.c.Ctx.Operation, strings.Join(others, ", "))
				out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(rc, msg, loc)}})
			}
		}
		// A write refused as fenced must belong to an operation recover was asked about.
		reported := map[string]bool{}
		for _, r := range h.Requests {
			if !r.Fenced || r.Operation == "" || asked[r.Operation] || reported[r.Operation] {
				continue
			}
			reported[r.Operation] = true
			msg := fmt.Sprintf("a write of operation %s, which no recover was asked about, was refused as fenced: %s", name(r.Operation), describeRequest(r))
			f := Finding{Message: msg, Location: ev.methodLocation(simulate.CallRecover)}
			if cs, ok := callOf(h, r.Call); ok {
				f.Evidence = []report.Evidence{ev.evidence(cs, msg, ev.methodLocation(cs.c.Method))}
			}
			out = append(out, f)
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------------
// LEAK-INVENTORY

// unclaimed tells whether an inventory box was never handed to a Session.
func unclaimed(state string) bool {
	switch state {
	case "waiting", "discarded", "invalidated", "unresolved", "preparing":
		return true
	}
	return false
}

func decideLeakInventory(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		boxes := map[string]simulate.InventoryBox{}
		for _, b := range h.Inventory {
			if unclaimed(b.State) {
				boxes[b.SandboxID] = b
			}
		}
		if len(boxes) == 0 {
			continue
		}
		// The last successful provider write of each path of each unclaimed box.
		type fileKey struct{ sandbox, path string }
		last := map[fileKey]*simulate.SandboxOp{}
		var order []fileKey
		for _, e := range h.Events {
			op := e.Sandbox
			if e.Kind != simulate.EventSandbox || op == nil || op.Error != "" {
				continue
			}
			if _, ok := boxes[op.SandboxID]; !ok {
				continue
			}
			k := fileKey{op.SandboxID, path.Clean(op.Path)}
			switch op.Op {
			case harness.OpWriteFile:
				if _, ok := last[k]; !ok {
					order = append(order, k)
				}
				last[k] = op
			case harness.OpRemove:
				last[k] = nil
			}
		}
		for _, k := range order {
			op := last[k]
			if op == nil {
				continue
			}
			b := boxes[k.sandbox]
			if !contains(b.Files, k.path) {
				continue
			}
			m := ev.Secrets.Find(op.Content())
			if len(m) == 0 {
				continue
			}
			cs, ok := callOf(h, op.Call)
			var loc *report.Location
			if ok {
				loc = ev.methodLocation(cs.c.Method)
			}
			msg := fmt.Sprintf("box %s (%s, never claimed) holds %s, written by the provider, containing %s (%s)", b.ID, b.State, k.path, m[0].Origin, m[0].Encoding)
			f := Finding{Message: msg, Location: loc}
			if ok {
				f.Evidence = []report.Evidence{ev.evidence(cs, msg, loc)}
			}
			out = append(out, f)
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------------
// IMAGE-NO-RETROFIT

// imageReadOnlyDirs are the image's read-only directories in the fake sandbox.
var imageReadOnlyDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/etc", "/opt"}

// imageDir returns the image directory (PATH or read-only) a path lies in, or "".
func imageDir(p string) string {
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	cp := path.Clean(p)
	for _, d := range simulate.ImagePath {
		if path.Dir(cp) == d || cp == d {
			return d + " (on the image's PATH)"
		}
	}
	for _, d := range imageReadOnlyDirs {
		if cp == d || strings.HasPrefix(cp, d+"/") {
			return d + " (read-only image directory)"
		}
	}
	return ""
}

func decideImageNoRetrofit(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		for _, e := range h.Events {
			op := e.Sandbox
			if e.Kind != simulate.EventSandbox || op == nil {
				continue
			}
			if op.Op != harness.OpWriteFile && op.Op != harness.OpRemove {
				continue
			}
			var why string
			if op.Op == harness.OpWriteFile && op.Mode&0o111 != 0 && op.Error == "" {
				why = fmt.Sprintf("wrote an executable file %s (mode %#o)", op.Path, op.Mode)
			}
			if d := imageDir(op.Path); d != "" {
				verb := "wrote"
				if op.Op == harness.OpRemove {
					verb = "removed"
				}
				w := fmt.Sprintf("%s %s in %s", verb, op.Path, d)
				if op.Error != "" {
					w += " (refused with " + op.Error + ")"
				}
				if why != "" {
					why += "; " + w
				} else {
					why = w
				}
			}
			if why == "" {
				continue
			}
			cs, ok := callOf(h, op.Call)
			method := "the provider"
			var loc *report.Location
			if ok {
				method = string(cs.c.Method)
				loc = ev.methodLocation(cs.c.Method)
			}
			tag := method + "|" + op.Path
			if seen[tag] {
				continue
			}
			seen[tag] = true
			msg := method + " " + why + " through the sandbox handle"
			f := Finding{Message: msg, Location: loc}
			if ok {
				f.Evidence = []report.Evidence{ev.evidence(cs, msg, loc)}
			}
			out = append(out, f)
		}
	}
	return out
}
