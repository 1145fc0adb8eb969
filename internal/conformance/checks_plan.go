package conformance

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

func init() {
	register(
		&Check{
			ID: "EP-GROUP", Title: "Provider declared in the right entry-point group", Area: AreaDiscovery, Severity: report.SeverityError,
			Clauses: []string{"EP-GROUP"},
			Static:  true, Needs: "the project's entry-point declarations", Exercise: exDiscovery,
			Rationale: "The platform finds the provider only through the entry-point group astrabox.providers.runtime_preparation with a module:Class reference. A declaration in a similar-looking group is silently ignored, and the platform prepares Agents and Sessions without any callback.",
			Hint:      "Declare the provider under [project.entry-points.\"astrabox.providers.runtime_preparation\"] as name = \"module:Class\".",
			Wrong:     "[project.entry-points.\"astrabox.providers.runtime-preparation\"]\nenterprise = \"my_deployment.preparation:PreparationProvider\"",
			Right:     "[project.entry-points.\"astrabox.providers.runtime_preparation\"]\nenterprise = \"my_deployment.preparation:PreparationProvider\"",
			Decide: func(ev *Evidence) []Finding {
				var out []Finding
				for _, nm := range ev.Static.NearMissGroups {
					f := Finding{Message: nm.Message, Location: at(nm.File, nm.Line)}
					if f.Location == nil {
						f.Location = at(ev.Static.Pyproject, 1)
					}
					out = append(out, f)
				}
				return out
			},
		},
		&Check{
			ID: "EP-SUBCLASS", Title: "Target subclasses RuntimePreparationProvider", Area: AreaDiscovery, Severity: report.SeverityError,
			Clauses: []string{"EP-SUBCLASS"},
			Static:  true, Needs: "the loaded target of the entry point", Exercise: exLoaded,
			Rationale: "The platform loads the entry point and requires a subclass of astrabox.seams.RuntimePreparationProvider that it can instantiate with no arguments; anything else fails startup.",
			Hint:      "Make the target a class deriving from astrabox.seams.RuntimePreparationProvider with a no-argument constructor.",
			Wrong:     "class PreparationProvider:\n    name = \"enterprise\"",
			Right:     "from astrabox.seams import RuntimePreparationProvider\n\nclass PreparationProvider(RuntimePreparationProvider):\n    name = \"enterprise\"",
			Decide: func(ev *Evidence) []Finding {
				l := ev.Load
				switch {
				case l == nil:
					return nil
				case !l.IsClass:
					return []Finding{{Message: fmt.Sprintf("the entry point's target %s is not a class", l.Qualname), Location: ev.classLocation()}}
				case !l.IsSubclass:
					return []Finding{{Message: fmt.Sprintf("class %s does not derive from astrabox.seams.RuntimePreparationProvider", l.Qualname), Location: ev.classLocation()}}
				case !l.Instantiated:
					return []Finding{{Message: fmt.Sprintf("class %s could not be instantiated with no arguments", l.Qualname), Location: ev.classLocation()}}
				}
				return nil
			},
		},
		&Check{
			ID: "EP-NAME", Title: "Provider has a stable, valid name", Area: AreaDiscovery, Severity: report.SeverityError,
			Clauses: []string{"EP-NAME"},
			Static:  true, Needs: "a loaded provider class", Exercise: exName,
			Rationale: "The provider name enters the runtime generation: it must be a non-empty class attribute matching [a-z0-9][a-z0-9._-]{0,62}, the same for every instance and every replica, or waiting inventory is invalidated on every restart.",
			Hint:      "Set a constant class attribute: name = \"enterprise\".",
			Wrong:     "class P(RuntimePreparationProvider):\n    @property\n    def name(self):\n        return str(uuid.uuid4())",
			Right:     "class P(RuntimePreparationProvider):\n    name = \"enterprise\"",
			Decide: func(ev *Evidence) []Finding {
				l := ev.Load
				if l == nil || !l.IsSubclass {
					return nil
				}
				if l.NameError != nil {
					return []Finding{{Message: *l.NameError, Location: ev.classLocation()}}
				}
				if !l.NameIsClassattr {
					return []Finding{{Message: "the name is not a plain class attribute, so it is not guaranteed to be the same for every instance and process", Location: ev.classLocation()}}
				}
				seen := map[string]bool{}
				for _, h := range ev.Histories {
					if h.Provider != "" {
						seen[h.Provider] = true
					}
				}
				if len(seen) > 1 {
					return []Finding{{Message: "the name differed between replicas", Location: ev.classLocation()}}
				}
				return nil
			},
		},
		&Check{
			ID: "PLAN-SYNC", Title: "plan is synchronous", Area: AreaPlan, Severity: report.SeverityError,
			Clauses: []string{"PLAN-SYNC"},
			Needs:   "a plan call that returned a plan", Exercise: exPlanReturned, Judges: judgesPlan,
			Rationale: "The platform calls plan synchronously whenever it plans an Agent's runtime; a coroutine function returns an un-awaited coroutine instead of a plan.",
			Hint:      "Define plan with def, not async def, and return a RuntimePreparationPlan.",
			Wrong:     "async def plan(self, *, config):\n    return RuntimePreparationPlan()",
			Right:     "def plan(self, *, config):\n    return RuntimePreparationPlan()",
			Decide: func(ev *Evidence) []Finding {
				if m, ok := ev.Load.Methods[string(simulate.CallPlan)]; ok && m.Async {
					return []Finding{{Message: "plan is a coroutine function", Location: ev.methodLocation(simulate.CallPlan)}}
				}
				for _, cs := range ev.calls(simulate.CallPlan) {
					if cs.returned() && simulate.KindCoroutine.Of(cs.c.Result) {
						return []Finding{{Message: "plan returned a coroutine", Location: ev.methodLocation(simulate.CallPlan), Evidence: []report.Evidence{ev.evidence(cs, "plan returned a coroutine object", ev.methodLocation(simulate.CallPlan))}}}
					}
				}
				return nil
			},
		},
		&Check{
			ID: "PLAN-NO-IO", Title: "plan performs no I/O", Area: AreaPlan, Severity: report.SeverityError,
			Clauses: []string{"PLAN-NO-IO"},
			Needs:   "a plan call that returned a plan", Exercise: exPlanReturned, Judges: judgesPlan,
			Rationale: "plan runs whenever the platform plans a runtime, on the planning path, and must be a pure function of the configuration: no file, network, subprocess or sleep.",
			Hint:      "Compute the plan from config alone; move reads and requests to synchronize or prepare_session.",
			Wrong:     "def plan(self, *, config):\n    with open(\"/etc/plan.json\") as f:\n        return RuntimePreparationPlan(declaration=json.load(f))",
			Right:     "def plan(self, *, config):\n    return RuntimePreparationPlan(declaration={\"model\": config[\"agent\"][\"model\"]})",
			Decide: func(ev *Evidence) []Finding {
				var out []Finding
				seen := map[string]bool{}
				for _, cs := range ev.calls(simulate.CallPlan) {
					for _, a := range cs.c.Observations.Audit {
						if a.AfterReturn {
							continue
						}
						key := fmt.Sprintf("%s:%d:%s", a.File, a.Line, a.Event)
						if seen[key] {
							continue
						}
						seen[key] = true
						loc := at(a.File, a.Line)
						msg := fmt.Sprintf("plan performed I/O: %s %s", a.Event, a.Summary)
						out = append(out, Finding{Message: msg, Location: loc, Evidence: []report.Evidence{ev.evidence(cs, msg, loc)}})
					}
					if n := len(requestsOf(cs)); n > 0 {
						msg := fmt.Sprintf("plan sent %d request(s) to the deployment double", n)
						out = append(out, Finding{Message: msg, Location: ev.methodLocation(simulate.CallPlan), Evidence: []report.Evidence{ev.evidence(cs, msg, nil)}})
					}
				}
				return out
			},
		},
		&Check{
			ID: "PLAN-STABLE", Title: "plan is stable for the same configuration", Area: AreaPlan, Severity: report.SeverityError,
			Clauses: []string{"PLAN-STABLE", "BOUND-GENERATION"},
			Needs:   "one Agent configuration planned twice in a scenario", Exercise: exPlanStable, Judges: judgesPlan,
			Rationale: "The provider name and the plan's declaration enter the runtime generation; a plan that changes for the same configuration churns the generation and invalidates waiting inventory every time.",
			Hint:      "Derive session_bound and the declaration only from config; no clocks, random values or process state.",
			Wrong:     "return RuntimePreparationPlan(declaration={\"at\": time.time()})",
			Right:     "return RuntimePreparationPlan(declaration={\"model\": config[\"agent\"][\"model\"]})",
			Decide: func(ev *Evidence) []Finding {
				type planKey struct{ scenario, config string }
				first := map[planKey]callSite{}
				for _, cs := range ev.calls(simulate.CallPlan) {
					if !cs.returned() || !simulate.KindPlan.Of(cs.c.Result) {
						continue
					}
					k := planKey{cs.h.Scenario, fmt.Sprintf("%v", cs.c.Args["config"])}
					prev, ok := first[k]
					if !ok {
						first[k] = cs
						continue
					}
					a, b := prev.c.Result, cs.c.Result
					if a.SessionBound != b.SessionBound || !bytes.Equal(canonical(a.Declaration), canonical(b.Declaration)) {
						msg := fmt.Sprintf("plan gave a different plan for the same configuration (%s on %s, then %s on %s)", prev.c.Key, prev.c.Replica, cs.c.Key, cs.c.Replica)
						return []Finding{{Message: msg, Location: ev.methodLocation(simulate.CallPlan), Evidence: []report.Evidence{ev.evidence(cs, msg, ev.methodLocation(simulate.CallPlan))}}}
					}
				}
				return nil
			},
		},
		&Check{
			ID: "LEAK-PLAN", Title: "No secret in the plan's declaration", Area: AreaLeak, Severity: report.SeverityError,
			Clauses: []string{"LEAK-PLAN"},
			Needs:   "a plan call that returned a plan", Exercise: exPlanReturned, Judges: judgesPlan,
			Rationale: "The declaration is stored with the runtime generation and shown to operators; a secret there is persisted in clear.",
			Hint:      "Keep credentials out of the declaration; declare which secret is needed, never its value.",
			Wrong:     "declaration={\"api_key\": config[\"secrets\"][\"model_api_key\"]}",
			Right:     "declaration={\"credential\": \"model_api_key\"}",
			Decide: func(ev *Evidence) []Finding {
				for _, cs := range ev.calls(simulate.CallPlan) {
					if !cs.returned() {
						continue
					}
					text := string(cs.c.Result.Declaration) + "\n" + cs.c.Result.Repr
					if m := ev.Secrets.FindString(text); len(m) > 0 {
						msg := fmt.Sprintf("the plan's declaration holds %s (%s)", m[0].Origin, m[0].Encoding)
						return []Finding{{Message: msg, Location: ev.methodLocation(simulate.CallPlan), Evidence: []report.Evidence{ev.evidence(cs, msg, ev.methodLocation(simulate.CallPlan))}}}
					}
				}
				return nil
			},
		},
	)
}

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

// classLocation is where the provider class is defined.
func (ev *Evidence) classLocation() *report.Location {
	if ev.Load == nil || ev.Load.File == "" {
		return nil
	}
	return &report.Location{Path: ev.Load.File, Line: ev.Load.Line}
}

// canonical is a JSON value as the checks compare it: simulate.CanonicalJSON, trimmed.
func canonical(raw []byte) []byte {
	return []byte(strings.TrimSpace(string(simulate.CanonicalJSON(raw))))
}
