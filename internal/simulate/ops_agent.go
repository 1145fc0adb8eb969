package simulate

import "fmt"

// The Agent ops: preparing inventory, recovering operations, releasing held requests, authoring versions.
func init() {
	registerOps(
		&opSpec{name: OpPrewarm, required: []string{"agent"}, allowed: []string{"replica", "boxes", "fault", "double"},
			notes: map[string]string{"boxes": "default 1, 0 to 16"},
			doc:   "Prepare boxes of waiting inventory for the Agent.", calls: []Callback{CallSynchronize},
			validate: validatePrewarm, run: (*platform).prewarm, gen: &Gen{Weight: 10, Emit: emitPrewarm}, simplify: simplifyPrewarm},
		&opSpec{name: OpRecover, required: []string{"operation"}, allowed: []string{"replica", "fault", "double"},
			doc: "Ask the provider to recover an unresolved synchronize operation.", calls: []Callback{CallRecover},
			run: (*platform).recover, gen: &Gen{Weight: 6, LostWeight: 16, Need: NeedOperation, Emit: emitRecover}},
		&opSpec{name: OpRelease, allowed: []string{"operation"},
			doc: "Release every request the double holds (`operation` is accepted but does not narrow it), and wait until they are answered.",
			run: (*platform).release, gen: &Gen{Weight: 5, LostWeight: 10, Need: NeedHeld, Emit: func(Draw) Step { return Step{Op: OpRelease} }}},
		&opSpec{name: OpConfigChange, required: []string{"agent"},
			doc: "The Agent's owner authors a new version.", run: (*platform).configChange,
			gen: &Gen{Weight: 3, Emit: func(d Draw) Step { return Step{Op: OpConfigChange, Agent: d.Agent()} }}},
	)
}

// emitPrewarm prepares one or two boxes on a drawn replica; now and then one box whose host is lost at the
// synchronize's write while the double holds it, or one superseded by a newer synchronize.
func emitPrewarm(d Draw) Step {
	st := Step{Op: OpPrewarm, Agent: d.Agent(), Boxes: 1 + d.Intn(2), Replica: d.Replica()}
	switch {
	case d.Chance(0.25):
		st.Boxes = 1
		st.Fault = &Fault{Kind: FaultHostLoss}
		st.Double = []DoubleFault{{Kind: DoubleHold, Method: "PUT", Times: 1}}
	case d.Chance(0.05):
		st.Boxes = 1
		st.Fault = &Fault{Kind: FaultSupersede}
	}
	return st
}

// emitRecover asks about a drawn operation, most often one lost with its host while its write was held.
func emitRecover(d Draw) Step {
	op := 1 + d.Intn(d.Operations())
	if lost := d.Lost(); len(lost) > 0 && d.Chance(0.8) {
		op = lost[d.Intn(len(lost))]
	}
	return Step{Op: OpRecover, Operation: fmt.Sprintf("op-%d", op), Replica: d.Replica()}
}

// validatePrewarm defaults boxes to 1 and bounds it.
func validatePrewarm(st *Step) string {
	if st.Boxes == 0 && !st.has("boxes") {
		st.Boxes = 1
	}
	if st.Boxes < 0 || st.Boxes > 16 {
		return "boxes must be between 0 and 16"
	}
	return ""
}

// simplifyPrewarm prepares one box instead of several.
func simplifyPrewarm(st *Step) {
	if st.Boxes > 1 {
		st.Boxes = 1
	}
}

// release plays release: every request the double holds is answered.
func (p *platform) release(*Step) {
	n := p.releaseHeld()
	p.event(&Event{Kind: EventPlatform, Message: fmt.Sprintf("released %d held request(s) at the double", n)})
}
