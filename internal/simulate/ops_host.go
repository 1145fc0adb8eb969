package simulate

import (
	"github.com/astrabox-dev/astrabox/internal/seconds"
	"github.com/astrabox-dev/astrabox/internal/services"
)

// The host ops: the host clock, replica processes and the identity service's consent.
func init() {
	registerOps(
		&opSpec{name: OpAdvance, required: []string{"seconds"},
			doc: "Move the host clock forward.", validate: validateAdvance,
			run:      func(p *platform, st *Step) { p.advance(seconds.Duration(st.Seconds)) },
			gen:      &Gen{Weight: 5, Emit: func(d Draw) Step { return Step{Op: OpAdvance, Seconds: float64(30 + d.Intn(670))} }},
			simplify: simplifyAdvance},
		&opSpec{name: OpHostLoss, required: []string{"replica"},
			doc: "Kill a replica's process; it restarts on its next callback.", run: (*platform).hostLoss,
			gen: &Gen{Weight: 3, Emit: func(d Draw) Step { return Step{Op: OpHostLoss, Replica: d.Replica()} }}},
		&opSpec{name: OpSetConsent, required: []string{"principal", "consent"},
			doc: "Change a principal's consent at the identity service (`granted` or `pending`).", validate: validateSetConsent,
			run: (*platform).setConsent, gen: &Gen{Weight: 3, Emit: emitSetConsent}},
	)
}

// emitSetConsent moves a drawn principal's consent to pending or granted, evenly.
func emitSetConsent(d Draw) Step {
	consent := ConsentPending
	if d.Chance(0.5) {
		consent = ConsentGranted
	}
	return Step{Op: OpSetConsent, Principal: d.Principal(), Consent: consent}
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

// setConsent plays set_consent at the identity service and at every declared service that holds consent.
func (p *platform) setConsent(st *Step) {
	url := ""
	if st.Consent == "pending" {
		url = "https://identity.example/consent/" + st.Principal
	}
	p.dbl.SetConsent(st.Principal, st.Consent, url)
	moved, err := p.moveServiceConsent(st.Principal, st.Consent)
	if err != nil {
		p.fail(err)
		return
	}
	p.event(&Event{Kind: EventPlatform, Message: "consent of " + st.Principal + " is now " + st.Consent + " at the identity service" + atServices(moved),
		Consent: &ConsentState{Principal: st.Principal, Consent: st.Consent, Services: moved}})
}

// atServices names the services a consent change was also sent to, for an event's message.
func atServices(names []string) string {
	out := ""
	for i, n := range names {
		switch {
		case i == 0:
			out += " and at service " + n
		case i == len(names)-1:
			out += " and " + n
		default:
			out += ", " + n
		}
	}
	return out
}

// seedConsent sets each principal's starting consent (and the state a consent check moves it to) at the
// identity service, and its starting consent at every declared service that holds consent.
func (p *platform) seedConsent() error {
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
	p.hist.Prerequisites = p.o.Services.prerequisites()
	for i, pr := range p.hist.Principals { // sorted: the same control requests in the same order every run
		moved, err := p.moveServiceConsent(pr.Principal, pr.Consent)
		if err != nil {
			return err
		}
		p.hist.Principals[i].Services = moved
		for _, svc := range moved {
			p.event(&Event{Kind: EventPlatform, Message: "consent of " + pr.Principal + " is " + pr.Consent + " at service " + svc})
		}
	}
	return nil
}

// moveServiceConsent sends the control request that moves principal's consent to state to every declared
// service that holds consent, straight to this scenario's stand-ins, and returns their names.
func (p *platform) moveServiceConsent(principal, state string) ([]string, error) {
	var moved []string
	for _, sp := range p.hist.Prerequisites {
		spec, _ := p.o.Services.spec(sp.Service)
		if err := services.SendControl(p.ctx, spec, p.o.Services.standIns[sp.Service], principal, state); err != nil {
			return moved, err
		}
		moved = append(moved, sp.Service)
	}
	return moved, nil
}
