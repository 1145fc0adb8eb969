package simulate

// The Session ops: starting a Session, moving it and refreshing its inputs.
func init() {
	registerOps(
		&opSpec{name: OpClaim, required: []string{"session", "agent", "principal"}, allowed: []string{"replica", "fault", "double"},
			doc: "Start a Session by claiming a waiting box.", startsSession: true, run: (*platform).claim, gen: &Gen{Weight: 8}},
		&opSpec{name: OpColdStart, required: []string{"session", "agent", "principal"}, allowed: []string{"replica", "fault", "double"},
			doc: "Start a Session in a new sandbox.", startsSession: true, run: (*platform).coldStart, gen: &Gen{Weight: 8}},
		&opSpec{name: OpReattach, required: []string{"session"}, allowed: []string{"replica", "fault", "double"},
			doc: "Start a new runtime for the Session in its sandbox.", needsSession: true, run: (*platform).reattach,
			gen: &Gen{Weight: 4, Need: NeedSession}},
		&opSpec{name: OpReplaceSandbox, required: []string{"session"}, allowed: []string{"replica", "fault", "double"},
			doc: "Move the Session to a new sandbox.", needsSession: true, run: (*platform).replaceSandbox,
			gen: &Gen{Weight: 4, Need: NeedSession}},
		&opSpec{name: OpRefreshInputs, required: []string{"session"}, allowed: []string{"replica"},
			doc: "Refresh a Session's inputs (no callback).", needsSession: true, run: (*platform).refreshInputs,
			notGenerated: "it makes no provider callback (SYNC-WHEN), so no order of it can break a clause"},
	)
}

// refreshInputs plays refresh_inputs: the platform makes no provider callback (SYNC-WHEN).
func (p *platform) refreshInputs(st *Step) {
	p.event(&Event{Kind: EventPlatform, Message: "inputs of session " + st.Session + " refreshed (no provider callback: SYNC-WHEN)"})
}
