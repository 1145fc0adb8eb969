package simulate

import "github.com/astrabox-dev/astrabox/internal/seconds"

// The host ops: the host clock, replica processes and the identity service's consent.
func init() {
	registerOps(
		&opSpec{name: OpAdvance, required: []string{"seconds"},
			doc: "Move the host clock forward.", validate: validateAdvance,
			run:      func(p *platform, st *Step) { p.advance(seconds.Duration(st.Seconds)) },
			gen:      &Gen{Weight: 5},
			simplify: simplifyAdvance},
		&opSpec{name: OpHostLoss, required: []string{"replica"},
			doc: "Kill a replica's process; it restarts on its next callback.", run: (*platform).hostLoss, gen: &Gen{Weight: 3}},
		&opSpec{name: OpSetConsent, required: []string{"principal", "consent"},
			doc: "Change a principal's consent at the identity service (`granted` or `pending`).", validate: validateSetConsent,
			run: (*platform).setConsent, gen: &Gen{Weight: 3}},
	)
}

func validateAdvance(st *Step) string {
	if st.Seconds <= 0 {
		return "seconds must be positive"
	}
	return ""
}

// simplifyAdvance moves the clock at most a minute.
func simplifyAdvance(st *Step) {
	if st.Seconds > 60 {
		st.Seconds = 60
	}
}

func validateSetConsent(st *Step) string {
	if st.Consent != "granted" && st.Consent != "pending" {
		return "consent must be granted or pending"
	}
	return ""
}

// hostLoss plays host_loss: the replica's process is killed.
func (p *platform) hostLoss(st *Step) {
	r := p.replicaFor(st)
	if r.proc != nil {
		r.proc.Kill()
	}
	p.event(&Event{Kind: EventPlatform, Replica: r.name, Message: "host loss: replica " + r.name + " killed; it restarts on its next callback"})
}

// setConsent plays set_consent at the identity service.
func (p *platform) setConsent(st *Step) {
	url := ""
	if st.Consent == "pending" {
		url = "https://identity.example/consent/" + st.Principal
	}
	p.dbl.SetConsent(st.Principal, st.Consent, url)
	p.event(&Event{Kind: EventPlatform, Message: "consent of " + st.Principal + " is now " + st.Consent + " at the identity service",
		Consent: &ConsentState{Principal: st.Principal, Consent: st.Consent}})
}

// seedConsent sets each principal's starting consent (and the state a consent check moves it to) at the
// identity service.
func (p *platform) seedConsent() {
	for name, pr := range p.sc.Principals {
		url := ""
		if pr.Consent == "pending" {
			url = "https://identity.example/consent/" + name
		}
		p.dbl.SetConsent(name, pr.Consent, url)
		if pr.ConsentOnCheck != "" {
			p.dbl.SetConsentOnCheck(name, pr.ConsentOnCheck)
		}
	}
}
