package simulate

// The turn ops: engine writes and the user-action endpoints of a Session.
func init() {
	registerOps(
		&opSpec{name: OpTurn, required: []string{"session", "attempt"}, allowed: []string{"replica", "live_for", "images", "via", "fault", "double"},
			doc: "One engine write, identified by its dispatch attempt id.", session: SessionNeeds, calls: []Callback{CallPrepareTurn},
			run: (*platform).turn, gen: &Gen{Weight: 20, Need: NeedSession, Emit: emitTurn}, simplify: simplifyWrite},
		&opSpec{name: OpRetry, required: []string{"session", "attempt"}, allowed: []string{"replica", "live_for", "via", "fault", "double"},
			doc: "A reconnect retry (or an explicit resend) of an attempt.", session: SessionNeeds, calls: []Callback{CallPrepareTurn},
			run: (*platform).turn, gen: &Gen{Weight: 12, Need: NeedAttempt, Emit: emitRetry}, simplify: simplifyWrite},
		&opSpec{name: OpReadUserActions, required: []string{"session"}, allowed: []string{"replica", "scope", "fault", "double"},
			doc: "`GET /api/v1/sessions/{id}/user-action`.", session: SessionNeeds, calls: []Callback{CallReadUserActions},
			run: (*platform).readUserActions, gen: &Gen{Weight: 6, Need: NeedSession, Emit: emitOnSession(OpReadUserActions)}},
		&opSpec{name: OpPerformUserAction, required: []string{"session", "action"}, allowed: []string{"replica", "scope", "fault", "double"},
			doc: "`POST /api/v1/sessions/{id}/user-action` with an operation id.", session: SessionNeeds,
			calls: []Callback{CallReadUserActions, CallPerformUserAction}, run: (*platform).performUserAction,
			gen: &Gen{Weight: 4, Need: NeedSession, Emit: emitPerformUserAction}},
	)
}

// emitTurn writes a turn of a drawn Session with a new attempt, now and then kept live, sent via the console,
// cancelled while its request is slowed at the double, or meeting an unavailable or dropping double.
func emitTurn(d Draw) Step {
	st := Step{Op: OpTurn, Session: d.Session(), Attempt: d.NewAttempt(), Replica: d.Replica()}
	if d.Chance(0.2) {
		st.LiveFor = LiveFor{Seconds: 600}
	}
	if d.Chance(0.1) {
		st.Via = "console"
	}
	switch {
	case d.Chance(0.1):
		// Cancelled when its request reaches the double and is slowed down there: no fixed wait for the
		// cancel, and a short delay (a provider that does not wait for its request is far past its reply
		// when the write lands). The fallback deadline, for a turn that sends no request, is generous: on a
		// loaded machine a request can take longer than 0.05 s to arrive, and the cancel must still be the
		// request's, not a deadline's that depends on how fast the machine was.
		st.Fault = &Fault{Kind: FaultCancel, After: 2, On: "request"}
		st.Double = []DoubleFault{{Kind: DoubleDelay, Delay: 0.03}}
	case d.Chance(0.05):
		st.Double = []DoubleFault{{Kind: DoubleUnavailable, Times: 1}}
	case d.Chance(0.05):
		st.Double = []DoubleFault{{Kind: DoubleDrop, Method: "POST", Times: 1}}
	}
	return st
}

// emitRetry retries a drawn attempt of an earlier turn on a drawn replica.
func emitRetry(d Draw) Step {
	as := d.Attempts()
	a := as[d.Intn(len(as))]
	return Step{Op: OpRetry, Session: a[0], Attempt: a[1], Replica: d.Replica()}
}

// emitPerformUserAction performs the fill the provider offers on a drawn Session.
func emitPerformUserAction(d Draw) Step {
	return Step{Op: OpPerformUserAction, Session: d.Session(), Action: FillOffered, Replica: d.Replica()}
}

// simplifyWrite makes an engine write (a turn or a retry) plain: not kept live, no images, sent straight to
// the host.
func simplifyWrite(st *Step) {
	st.LiveFor, st.Images, st.Via = LiveFor{}, 0, ""
}
