package simulate

import (
	"encoding/json"
	"fmt"
	"path"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/seconds"
)

// runStep plays one scenario step.
func (p *platform) runStep(st *Step) {
	p.event(&Event{Kind: EventStep, Replica: st.Replica, Message: st.String(), Faults: st.faultKinds()})
	var faults []double.FaultID
	for _, df := range st.Double {
		faults = append(faults, p.dbl.AddFault(toDoubleFault(df, st.Replica)))
	}
	defer func() {
		for _, id := range faults {
			p.dbl.RemoveFault(id)
		}
	}()
	spec, ok := opRegistry[st.Op]
	if !ok || spec.run == nil {
		panic(fmt.Sprintf("simulate: op %q has no run function (Validate admits only registered ops)", st.Op))
	}
	spec.run(p, st)
}

func toDoubleFault(df DoubleFault, replica string) double.Fault {
	f := double.Fault{Method: df.Method, PathPrefix: df.Path, Times: df.Times}
	if df.Write.N > 0 {
		f.WritesOnly, f.Skip = true, df.Write.N-1
		if f.Times == 0 {
			f.Times = 1
		}
	}
	f.Kind, _ = double.ParseFaultKind(df.Kind) // validated with the scenario
	if f.Kind == double.Delay {
		f.Duration = seconds.Duration(df.Delay)
		if f.Duration <= 0 {
			f.Duration = 100 * time.Millisecond
		}
	}
	return f
}

func (p *platform) advance(d time.Duration) {
	p.clock.Advance(d)
	p.event(&Event{Kind: EventPlatform, Message: fmt.Sprintf("host clock advanced %s", d)})
	for _, op := range p.ops {
		if op.state == "unresolved" && p.clock.Elapsed() >= op.deadline {
			op.state = "expired"
			op.box.state = "discarded"
			p.event(&Event{Kind: EventPlatform, Message: fmt.Sprintf("operation %s (%s) passed its deadline unresolved; its box %s is discarded and never published", op.label, op.id, op.box.id)})
		}
	}
}

// planAgent calls plan for an Agent, updates its generation and invalidates waiting inventory of other
// generations (BOUND-GENERATION). It reports false when plan failed.
func (p *platform) planAgent(r *replica, a *agentState) bool {
	rec := p.call(r, callSpec{method: "plan", args: map[string]any{"config": a.config}, ctx: CallContext{Agent: a.spec.ID, Version: a.version}, deadline: p.sc.Deadlines.Plan})
	if !rec.Returned(KindPlan) {
		p.refuse(r.name, "RUNTIME_PREPARATION_FAILED", "plan for agent %s did not give a RuntimePreparationPlan", a.spec.ID)
		return false
	}
	a.sessionBound = rec.Result.SessionBound
	a.declaration = rec.Result.Declaration
	gen := p.generation(a)
	if gen != a.generation && a.generation != "" {
		p.event(&Event{Kind: EventPlatform, Message: fmt.Sprintf("runtime generation of agent %s changed %s -> %s", a.spec.ID, a.generation, gen)})
	}
	a.generation = gen
	for _, b := range p.boxes {
		if b.agent == a.spec.ID && b.state == "waiting" && b.generation != gen {
			b.state = "invalidated"
			p.event(&Event{Kind: EventPlatform, Message: fmt.Sprintf("waiting box %s (%s) invalidated: generation is now %s", b.id, b.generation, gen)})
		}
	}
	return true
}

// newSandbox creates a sandbox with the image, workspace account and the Agent's Plugin and Skills caches.
func (p *platform) newSandbox(a *agentState) *Sandbox {
	p.nextSB++
	sb := NewSandbox(fmt.Sprintf("sb-%d", p.nextSB))
	sb.PlatformWrite("/usr/local/bin/claude", []byte("#!/bin/sh\n# image-baked Claude CLI wrapper\n"), 0o755, OwnerRoot)
	for _, pk := range packagesOf(a.config) {
		dir := path.Join(PluginCacheDir, pk.name)
		src, _ := json.Marshal(pk.source)
		sb.PlatformWrite(path.Join(dir, ".astrabox-source.json"), src, 0o644, OwnerRoot)
		sb.PlatformWrite(path.Join(dir, "plugin.json"), []byte(fmt.Sprintf("{\"name\": %q}\n", pk.name)), 0o644, OwnerRoot)
	}
	for _, sk := range skillsOf(a.config) {
		sb.PlatformWrite(path.Join(SkillsDir, sk, "SKILL.md"), []byte("# "+sk+"\n"), 0o644, OwnerRoot)
	}
	p.mu.Lock()
	p.sandboxes[sb.ID] = sb
	p.mu.Unlock()
	return sb
}

type pkg struct {
	name   string
	source map[string]any
}

func packagesOf(cfg map[string]any) []pkg {
	var out []pkg
	list, _ := cfg["packages"].([]any)
	for i, x := range list {
		m, _ := x.(map[string]any)
		name, _ := m["name"].(string)
		if name == "" {
			name = fmt.Sprintf("package-%d", i+1)
		}
		out = append(out, pkg{name: name, source: m})
	}
	return out
}

func skillsOf(cfg map[string]any) []string {
	var out []string
	list, _ := cfg["skills"].([]any)
	for _, x := range list {
		if s, ok := x.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// prewarm prepares boxes for an Agent and synchronizes each once before publishing it (SYNC-WHEN).
func (p *platform) prewarm(st *Step) {
	a := p.agents[st.Agent]
	r := p.replicaFor(st)
	if st.Boxes == 0 {
		p.event(&Event{Kind: EventPlatform, Message: "no capacity requested: agent " + a.spec.ID + " is not synchronized"})
		return
	}
	if !p.planAgent(r, a) {
		return
	}
	for i := 0; i < st.Boxes; i++ {
		p.nextBox++
		b := &box{id: fmt.Sprintf("box-%d", p.nextBox), agent: a.spec.ID, generation: a.generation, version: a.version, state: "preparing"}
		b.sandbox = p.newSandbox(a)
		p.boxes = append(p.boxes, b)
		if a.sessionBound {
			b.engineInit = false
			p.event(&Event{Kind: EventPlatform, Message: fmt.Sprintf("box %s: image, workspace account, Plugin/Skills caches, control service and shared seats prepared; engine not initialized (session-bound); no Vault needed", b.id)})
		} else {
			b.engineInit = true
			b.sandbox.PlatformWrite(SandboxHome+"/.engine/config.json", []byte(`{"model_api_key": "vault://agent/model_api_key"}`+"\n"), 0o600, OwnerWorkload)
			p.event(&Event{Kind: EventEngine, Message: fmt.Sprintf("box %s: engine initialized with Vault references substituted for credentials", b.id),
				Engine: &EngineStart{Adapter: p.sc.Engine, SandboxID: b.sandbox.ID, Initialized: true}})
		}
		p.synchronize(r, st, a, b)
	}
}

func (p *platform) synchronize(r *replica, st *Step, a *agentState, b *box) {
	before := [4]any{a.version, a.refreshRev, a.prepID, a.generation}
	op := &operation{label: fmt.Sprintf("op-%d", len(p.ops)+1), agent: a.spec.ID, box: b, state: "running", replica: r.name}
	op.id = p.newID("op")
	op.deadline = p.clock.Elapsed() + seconds.Duration(p.sc.Deadlines.OperationLease)
	p.ops = append(p.ops, op)
	var packages []any
	for _, pk := range packagesOf(a.config) {
		packages = append(packages, map[string]any{"source": pk.source, "path": path.Join(PluginCacheDir, pk.name)})
	}
	var skills any
	if len(skillsOf(a.config)) > 0 {
		skills = SkillsDir
	}
	args := map[string]any{"context": map[string]any{
		"operation":          map[string]any{"agent_id": a.spec.ID, "operation_id": op.id, "deadline": 0.0},
		"creator_user_id":    a.spec.Creator,
		"config_version":     a.version,
		"preparation_id":     a.prepID,
		"runtime_generation": a.generation,
		"config":             a.config,
		"sandbox":            sandboxJSON(b.sandbox),
		"packages":           packages,
		"skills_path":        skills,
	}}
	cs := callSpec{method: "synchronize", args: args, deadline: p.sc.Deadlines.Synchronize, fault: st.Fault, holds: hasHold(st),
		ctx: CallContext{Agent: a.spec.ID, Operation: op.label, Version: a.version, Box: b.id, SandboxID: b.sandbox.ID}}
	if st.Fault != nil && st.Fault.Kind == FaultSupersede {
		change := st.Fault.Change
		cs.onRun = func() {
			var what string
			switch change {
			case "version":
				a.version++
				a.config = p.agentConfig(a.spec.ID, a.version)
				what = fmt.Sprintf("authored version %d", a.version)
			case "pool":
				a.prepID = p.newID("prep")
				what = "a new pool lifetime " + a.prepID
			case "generation":
				a.generation = p.newID("gen")
				what = "a new runtime generation " + a.generation
			default:
				a.refreshRev++
				what = fmt.Sprintf("refresh revision %d", a.refreshRev)
			}
			p.event(&Event{Kind: EventPlatform, Message: fmt.Sprintf("another replica updated agent %s (%s) while synchronize ran", a.spec.ID, what)})
		}
	}
	rec := p.call(r, cs)
	if rec.Outcome != OutcomeReturned {
		op.state = "unresolved"
		b.state = "unresolved"
		p.event(&Event{Kind: EventOutcome, Replica: r.name, Code: "OPERATION_UNRESOLVED",
			Message: fmt.Sprintf("synchronize %s for box %s did not complete (%s): operation %s is unresolved; only recover may run for it until its deadline", op.id, b.id, rec.Outcome, op.label),
			Data:    map[string]any{"operation": op.label, "operation_id": op.id}})
		return
	}
	op.state = "done"
	after := [4]any{a.version, a.refreshRev, a.prepID, a.generation}
	if before != after || b.generation != a.generation {
		b.state = "discarded"
		p.event(&Event{Kind: EventOutcome, Replica: r.name, Code: "PREPARATION_SUPERSEDED",
			Message: fmt.Sprintf("synchronize result for box %s refused: the agent changed while it ran (compare-and-set failed)", b.id)})
		return
	}
	b.state = "waiting"
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: fmt.Sprintf("box %s published to waiting inventory (receipt: generation %s, engine_initialized=%v)", b.id, b.generation, b.engineInit),
		Data: map[string]any{"box": b.id, "engine_initialized": b.engineInit}})
}

func hasHold(st *Step) bool {
	for _, d := range st.Double {
		if d.Kind == DoubleHold {
			return true
		}
	}
	return false
}

func sandboxJSON(sb *Sandbox) map[string]any {
	return map[string]any{"sandbox_id": sb.ID, "home": SandboxHome, "workspace": SandboxWorkspace}
}

func (p *platform) findOp(label string) *operation {
	for _, op := range p.ops {
		if op.label == label || op.id == label {
			return op
		}
	}
	return nil
}

// recover asks the provider whether an unresolved operation can never write again (RECOVER-*).
func (p *platform) recover(st *Step) {
	op := p.findOp(st.Operation)
	r := p.replicaFor(st)
	if op == nil {
		p.refuse(r.name, "NO_SUCH_OPERATION", "operation %s does not exist in this run (operations are op-1, op-2, ... in the order synchronize ran)", st.Operation)
		return
	}
	if op.state == "expired" {
		p.refuse(r.name, "OPERATION_EXPIRED", "operation %s passed its deadline; recover is not called", op.label)
		return
	}
	args := map[string]any{"operation": map[string]any{"agent_id": op.agent, "operation_id": op.id, "deadline": 0.0}}
	rec := p.call(r, callSpec{method: "recover", args: args, deadline: p.sc.Deadlines.Recover, fault: st.Fault, holds: hasHold(st),
		ctx: CallContext{Agent: op.agent, Operation: op.label, Box: op.box.id}})
	if rec.Returned(KindBool) && rec.Result.Value {
		if op.state == "unresolved" {
			op.state = "recovered"
			op.box.state = "discarded"
		}
		p.event(&Event{Kind: EventOutcome, Replica: r.name, Message: fmt.Sprintf("operation %s recovered: it can never write again; box %s discarded", op.label, op.box.id), Data: map[string]any{"operation": op.label, "recovered": true}})
		return
	}
	p.event(&Event{Kind: EventOutcome, Replica: r.name, Message: fmt.Sprintf("operation %s still unresolved after recover (%s)", op.label, rec.Outcome), Data: map[string]any{"operation": op.label, "recovered": false}})
}

func (p *platform) configChange(st *Step) {
	a := p.agents[st.Agent]
	a.version++
	a.prepID = p.newID("prep")
	a.config = p.agentConfig(a.spec.ID, a.version)
	p.event(&Event{Kind: EventPlatform, Message: fmt.Sprintf("agent %s authored version %d (new pool lifetime %s)", a.spec.ID, a.version, a.prepID)})
	p.planAgent(p.replicaFor(st), a)
}
