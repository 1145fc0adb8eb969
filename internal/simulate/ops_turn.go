package simulate

// The turn ops: engine writes and the user-action endpoints of a Session.
func init() {
	registerOps(
		&opSpec{name: OpTurn, required: []string{"session", "attempt"}, allowed: []string{"replica", "live_for", "images", "via", "fault", "double"},
			doc: "One engine write, identified by its dispatch attempt id.", needsSession: true, run: (*platform).turn,
			gen: &Gen{Weight: 20, Need: NeedSession}, simplify: simplifyWrite},
		&opSpec{name: OpRetry, required: []string{"session", "attempt"}, allowed: []string{"replica", "live_for", "via", "fault", "double"},
			doc: "A reconnect retry (or an explicit resend) of an attempt.", needsSession: true, run: (*platform).turn,
			gen: &Gen{Weight: 12, Need: NeedAttempt}, simplify: simplifyWrite},
		&opSpec{name: OpReadUserActions, required: []string{"session"}, allowed: []string{"replica", "scope", "fault", "double"},
			doc: "`GET /api/v1/sessions/{id}/user-action`.", needsSession: true, run: (*platform).readUserActions,
			gen: &Gen{Weight: 6, Need: NeedSession}},
		&opSpec{name: OpPerformUserAction, required: []string{"session", "action"}, allowed: []string{"replica", "scope", "fault", "double"},
			doc: "`POST /api/v1/sessions/{id}/user-action` with an operation id.", needsSession: true, run: (*platform).performUserAction,
			gen: &Gen{Weight: 4, Need: NeedSession}},
	)
}

// simplifyWrite makes an engine write (a turn or a retry) plain: not kept live, no images, sent straight to
// the host.
func simplifyWrite(st *Step) {
	st.LiveFor, st.Images, st.Via = LiveFor{}, 0, ""
}
