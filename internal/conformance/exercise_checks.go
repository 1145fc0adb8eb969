package conformance

import (
	"fmt"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// The Exercise functions of the checks: each counts, from typed facts of the histories, what its check
// must have seen to decide (the check's Needs).

// Callback groups the checks judge.
var (
	judgesPlan      = []simulate.Callback{simulate.CallPlan}
	judgesSync      = []simulate.Callback{simulate.CallSynchronize}
	judgesRecover   = []simulate.Callback{simulate.CallRecover}
	judgesTurn      = []simulate.Callback{simulate.CallPrepareTurn}
	judgesMaterials = []simulate.Callback{simulate.CallPrepareSession, simulate.CallPrepareTurn}
	judgesUAState   = []simulate.Callback{simulate.CallReadUserActions, simulate.CallPerformUserAction}
	judgesUA        = []simulate.Callback{simulate.CallPrepareSession, simulate.CallPrepareTurn, simulate.CallReadUserActions, simulate.CallPerformUserAction}
	judgesBox       = []simulate.Callback{simulate.CallSynchronize, simulate.CallPrepareSession, simulate.CallPrepareTurn}
	judgesAll       = simulate.Callbacks()
)

// exDiscovery is exercised by discovery itself.
func exDiscovery(ev *Evidence) Exercise {
	where := "the project's entry-point declarations"
	if ev.Static.Pyproject != "" {
		where = "the entry-point groups declared in " + relPath(ev.Static.Pyproject, ev.Project)
	}
	return Exercise{Met: true, Over: where}
}

// exLoaded needs the provider's target to have been loaded.
func exLoaded(ev *Evidence) Exercise {
	if ev.Load == nil {
		return Exercise{Missing: "the target was never loaded"}
	}
	return Exercise{Met: true, Over: "the loaded target " + ev.Load.Qualname}
}

// exName needs a loaded provider class whose name could be read.
func exName(ev *Evidence) Exercise {
	if ev.Load == nil || !ev.Load.IsSubclass {
		return Exercise{Missing: "the target is not a provider class (see EP-SUBCLASS), so its name could not be read"}
	}
	return Exercise{Met: true, Over: fmt.Sprintf("the class attribute name of %s and the name reported in %d scenario%s", ev.Load.Qualname, len(ev.Histories), plural(len(ev.Histories)))}
}

func returnedPlan(_ *Evidence, cs callSite) bool { return cs.c.Returned(simulate.KindPlan) }

var exPlanReturned = needCalls(need{calls: judgesPlan, met: returnedPlan, label: "returned a plan",
	reach: "every scenario with an Agent plans it; a plan that raises or times out is not judged"})

// exPlanStable needs the same configuration planned twice in one scenario.
func exPlanStable(ev *Evidence) Exercise {
	n := need{min: 1, reach: "a scenario that plans one Agent configuration on two replicas (prewarm on two replicas) reaches it"}
	t := newTally(callNoun(simulate.CallPlan))
	first := map[string]bool{}
	repeats := 0
	for _, cs := range ev.calls(simulate.CallPlan) {
		if !returnedPlan(ev, cs) {
			t.add(cs)
			continue
		}
		k := cs.h.Scenario + "\x00" + fmt.Sprintf("%v", cs.c.Args["config"])
		if first[k] {
			repeats++
			t.add(cs, "repeats of a configuration already planned")
			continue
		}
		first[k] = true
		t.add(cs)
	}
	return n.result(t, repeats)
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

// exUserActions needs a user action raised or returned (or a user-action state, with states set).
func exUserActions(states bool) func(ev *Evidence) Exercise {
	return func(ev *Evidence) Exercise {
		t := newTally(callNoun(judgesUA...))
		met := 0
		for _, cs := range ev.calls(judgesUA...) {
			var labels []string
			if raisedUserAction(cs) != nil {
				labels = append(labels, "raised user actions")
			}
			if st := stateOf(cs); st != nil {
				if _, ok := stateUserAction(st); ok {
					labels = append(labels, "states with a user action")
				} else if states {
					labels = append(labels, "states without a user action")
				}
			}
			if len(labels) > 0 {
				met++
			}
			t.add(cs, labels...)
		}
		if met == 0 && len(ev.overridden(judgesUAState...)) == 0 {
			return Exercise{Tally: t.report(), NotApplicable: "the provider raised no PreparationUserActionRequired and keeps the platform's defaults for read_user_actions and perform_user_action: it has no user action to judge"}
		}
		if met == 0 && !ev.hasPrerequisite() {
			return Exercise{Tally: t.report(), NotApplicable: "the provider never consulted a principal's consent and raised or returned no user action: it has no prerequisite, so no user action to judge"}
		}
		return need{reach: "a principal whose consent is pending (the default suite's consent scenarios) reaches it"}.result(t, met)
	}
}

var exUAState = needCalls(need{calls: judgesUAState, label: "returned a state",
	met:   func(_ *Evidence, cs callSite) bool { return stateOf(cs) != nil },
	reach: "read_user_actions steps (GET user-action) reach it"})

// exUAIdempotent needs one pending requirement performed on two replicas.
func exUAIdempotent(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallPerformUserAction))
	for _, cs := range ev.calls(simulate.CallPerformUserAction) {
		t.add(cs)
	}
	met := 0
	for _, h := range ev.Histories {
		for _, g := range performGroups(h) {
			if len(replicasOf(g)) >= 2 {
				met++
				t.mark("pending requirements performed on two or more replicas")
			}
		}
	}
	reach := "a scenario that performs an operation the provider offers, for one pending requirement, on two replicas reaches it"
	offered := offeredActions(ev)
	if len(offered) > 0 {
		reach += " (the provider offered " + offeredText(offered) + ")"
	} else if met == 0 && t.calls == 0 && len(ev.calls(simulate.CallReadUserActions)) > 0 {
		return Exercise{Tally: t.report(), NotApplicable: "no user-action state the provider returned offered an operation, so the host never calls perform_user_action"}
	}
	return need{reach: reach}.result(t, met)
}

// offeredActions counts the operation ids the provider offered in user-action states.
func offeredActions(ev *Evidence) map[string]int {
	out := map[string]int{}
	for _, cs := range ev.calls(judgesUAState...) {
		if st := stateOf(cs); st != nil {
			for _, a := range st.Actions {
				out[a.ID]++
			}
		}
	}
	return out
}

// exUAAuthority needs a turn for a principal whose consent was pending, when the provider has a consent
// prerequisite at all.
func exUAAuthority(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallPrepareTurn))
	aware, met := 0, 0
	for _, h := range ev.Histories {
		aware += len(prerequisitePrincipals(h))
		for _, cs := range ev.callsIn(h, simulate.CallPrepareTurn) {
			label := ""
			if consentAt(h, cs.e, cs.c.Ctx.Principal) == simulate.ConsentPending {
				met++
				label = "for a principal whose consent was pending"
			}
			t.add(cs, label)
		}
	}
	if aware == 0 { // see hasPrerequisite
		return Exercise{Tally: t.report(), NotApplicable: "the provider never consulted a principal's consent nor raised or returned a user action: it has no prerequisite for prepare_turn to enforce"}
	}
	return need{reach: "a turn by a principal whose consent is pending reaches it"}.result(t, met)
}

// exTurnRetry needs a retry of an attempt that already had material.
func exTurnRetry(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallPrepareTurn))
	met := 0
	for _, h := range ev.Histories {
		answered := map[attemptKey]string{} // -> replica of the first answer
		for _, cs := range ev.callsIn(h, simulate.CallPrepareTurn) {
			k := attemptKey{h, cs.c.Ctx.Session, cs.c.Ctx.Attempt}
			var labels []string
			if cs.c.Ctx.Refresh {
				labels = append(labels, "refreshes")
			} else if first, ok := answered[k]; ok {
				met++
				labels = append(labels, "retries of an answered attempt")
				if first != cs.c.Replica {
					labels = append(labels, "on another replica")
				}
			}
			if _, ok := answered[k]; !ok && cs.materials() != nil {
				answered[k] = cs.c.Replica
			}
			t.add(cs, labels...)
		}
	}
	return need{reach: "a retry step with the same dispatch attempt after a turn returned material reaches it"}.result(t, met)
}

// exTurnFilesOnly needs a turn's materials returned for a Session whose prepare_session delivered.
var exTurnFilesOnly = needCalls(need{calls: judgesTurn, label: "returned materials",
	met:   func(_ *Evidence, cs callSite) bool { return cs.materials() != nil },
	reach: "a turn with consent granted reaches it"})

// exFaultFreeTurn needs a fault-free prepare_turn with consent granted.
var exFaultFreeTurn = needCalls(need{calls: judgesTurn, label: "fault-free",
	met: func(ev *Evidence, cs callSite) bool { return ev.faultFree(cs) },
	also: func(_ *Evidence, cs callSite) []string {
		if cancelledCall(cs.c) {
			return []string{"cancelled by the platform"}
		}
		return nil
	},
	reach: "a turn step without a fault, by a principal whose consent is granted, reaches it"})

// exRefresh needs a refresh of an attempt that already had material, when the provider sets a validity.
func exRefresh(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallPrepareTurn))
	met, finite := 0, 0
	longest := 0.0
	for _, cs := range ev.calls(simulate.CallPrepareTurn) {
		label := ""
		if m := cs.materials(); m != nil {
			if tv := m.Validity(); tv.Valid() {
				finite++
				longest = max(longest, tv.Seconds)
			}
		}
		if cs.c.Ctx.Refresh {
			met++
			label = "refreshes"
		}
		t.add(cs, label)
	}
	if finite == 0 && met == 0 {
		return Exercise{Tally: t.report(), NotApplicable: "prepare_turn never returned a finite turn_validity_seconds, so the platform never refreshes turn material"}
	}
	return need{reach: fmt.Sprintf("a write kept live for more than twice the validity the provider returned (up to %gs) reaches it", longest)}.result(t, met)
}

// exFaultFree needs a fault-free call of a callback the provider defines.
var exFaultFree = needCalls(need{label: "fault-free",
	met: func(ev *Evidence, cs callSite) bool { return ev.faultFree(cs) },
	also: func(ev *Evidence, cs callSite) []string {
		if ev.faultFree(cs) && cs.c.Outcome != simulate.OutcomeReturned {
			return []string{"fault-free that did not return"}
		}
		return nil
	},
	reach: "any step without a fault reaches it"})

// exCancelled needs a callback the platform cancelled; a provider that never talks to the deployment has
// nothing a cancellation could leave outstanding.
func exCancelled(ev *Evidence) Exercise {
	ex := needCalls(need{label: "cancelled by the platform",
		met: func(_ *Evidence, cs callSite) bool {
			return cancelledCall(cs.c) && cs.c.Outcome != simulate.OutcomeHostLoss
		},
		reach: "a step with a timeout or cancel fault on a callback the provider defines, while it waits on a request, reaches it"})(ev)
	if !ex.Met && !ev.providerRequests() {
		ex.NotApplicable = "the provider made no request to the deployment from any callback: a cancellation has no write of its own it could leave outstanding"
	}
	return ex
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

// providerRequests tells whether any callback of the provider sent a request to the deployment double.
func (ev *Evidence) providerRequests() bool {
	for _, h := range ev.Histories {
		for _, r := range h.Requests {
			if r.Call != "" || r.Callback != "" {
				return true
			}
		}
	}
	return false
}

// exSyncReturned needs a synchronize that returned.
var exSyncReturned = needCalls(need{calls: judgesSync, label: "that returned",
	met:   func(_ *Evidence, cs callSite) bool { return cs.c.Outcome == simulate.OutcomeReturned },
	reach: "a prewarm step without faults reaches it"})

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

// exRecover needs a recover call for an unresolved operation.
var exRecover = needCalls(need{calls: judgesRecover, label: "returned an answer",
	met:   func(_ *Evidence, cs callSite) bool { return cs.c.Returned(simulate.KindBool) },
	reach: "a synchronize that ends unresolved (timeout, host loss) followed by a recover step reaches it"})

// exRecoverTwice needs two recover calls for one operation.
func exRecoverTwice(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallRecover))
	met := 0
	for _, h := range ev.Histories {
		seen := map[string]int{}
		for _, cs := range ev.callsIn(h, simulate.CallRecover) {
			id := operationID(cs.c)
			seen[id]++
			label := ""
			if id != "" && seen[id] == 2 {
				met++
				label = "operations recovered twice"
			}
			t.add(cs, label)
		}
	}
	return need{reach: "two recover steps for the same unresolved operation reach it"}.result(t, met)
}

// exInventory needs unclaimed inventory a provider call prepared.
func exInventory(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallSynchronize))
	met := 0
	for _, h := range ev.Histories {
		for _, b := range h.Inventory {
			if unclaimed(b.State) {
				met++
			}
		}
		for _, cs := range ev.callsIn(h, simulate.CallSynchronize) {
			t.add(cs)
		}
	}
	t.count("unclaimed boxes", met)
	return need{reach: "a prewarm step that leaves boxes waiting reaches it"}.result(t, met)
}

// exBox needs a call that had a sandbox handle (synchronize, prepare_session, prepare_turn).
var exBox = needCalls(need{calls: judgesBox, label: "with a sandbox",
	met: func(_ *Evidence, cs callSite) bool {
		return cs.c.Ctx.SandboxID != "" || cs.c.Outcome == simulate.OutcomeReturned
	},
	reach: "prewarm, claim and turn steps reach it"})

// offeredText lists offered operation ids with how often each was offered, sorted by id.
func offeredText(offered map[string]int) string {
	var parts []string
	for _, id := range sortedIntKeys(offered) {
		parts = append(parts, fmt.Sprintf("%s %d time%s", id, offered[id], plural(offered[id])))
	}
	return strings.Join(parts, ", ")
}

// hasPrerequisite tells whether the provider showed a prerequisite in any history: it consulted a principal's
// consent, or raised or returned a user action.
func (ev *Evidence) hasPrerequisite() bool {
	for _, h := range ev.Histories {
		if len(prerequisitePrincipals(h)) > 0 {
			return true
		}
	}
	return false
}

// exAnyCall needs any call of a callback the provider defines.
var exAnyCall = needCalls(need{reach: "any scenario that calls a callback the provider defines reaches it"})
