package simulate

// The Session ops: starting a Session, moving it and refreshing its inputs.
func init() {
	registerOps(
		&opSpec{name: OpClaim, required: []string{"session", "agent", "principal"}, allowed: []string{"replica", "fault", "double"},
			doc: "Start a Session by claiming a waiting box.", session: SessionStarts, calls: []Callback{CallPrepareSession},
			run: (*platform).claim, gen: &Gen{Weight: 8, Emit: emitStart(OpClaim)}},
		&opSpec{name: OpColdStart, required: []string{"session", "agent", "principal"}, allowed: []string{"replica", "fault", "double"},
			doc: "Start a Session in a new sandbox.", session: SessionStarts, calls: []Callback{CallPrepareSession},
			run: (*platform).coldStart, gen: &Gen{Weight: 8, Emit: emitStart(OpColdStart)}},
		&opSpec{name: OpReattach, required: []string{"session"}, allowed: []string{"replica", "fault", "double"},
			doc: "Start a new runtime for the Session in its sandbox.", session: SessionNeeds, calls: []Callback{CallPrepareSession},
			run: (*platform).reattach, gen: &Gen{Weight: 4, Need: NeedSession, Emit: emitOnSession(OpReattach)}},
		&opSpec{name: OpReplaceSandbox, required: []string{"session"}, allowed: []string{"replica", "fault", "double"},
			doc: "Move the Session to a new sandbox.", session: SessionNeeds, calls: []Callback{CallPrepareSession},
			run: (*platform).replaceSandbox, gen: &Gen{Weight: 4, Need: NeedSession, Emit: emitOnSession(OpReplaceSandbox)}},
		&opSpec{name: OpRefreshInputs, required: []string{"session"}, allowed: []string{"replica"},
			doc: "Refresh a Session's inputs (no callback).", session: SessionNeeds, run: (*platform).refreshInputs,
			notGenerated: "it makes no provider callback (SYNC-WHEN), so no order of it can break a clause"},
	)
}

// emitStart writes a step of op that starts a new Session of a drawn principal.
func emitStart(op string) func(d Draw) Step {
	return func(d Draw) Step {
		return Step{Op: op, Session: d.NewSession(), Agent: d.Agent(), Principal: d.Principal(), Replica: d.Replica()}
	}
}

// emitOnSession writes a step of op on a drawn Session and replica.
func emitOnSession(op string) func(d Draw) Step {
	return func(d Draw) Step { return Step{Op: op, Session: d.Session(), Replica: d.Replica()} }
}

// refreshInputs plays refresh_inputs: the platform makes no provider callback (SYNC-WHEN).
func (p *platform) refreshInputs(st *Step) {
	p.event(&Event{Kind: EventPlatform, Message: "inputs of session " + st.Session + " refreshed (no provider callback: SYNC-WHEN)"})
}
