package simulate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/astrabox-dev/astrabox/internal/conntag"
	"github.com/astrabox-dev/astrabox/internal/double"
	"github.com/astrabox-dev/astrabox/internal/egress"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/services"
)

// Services are the provider's declared external systems for a run (`[tool.astrabox.services]`): their
// stand-ins and the run's certificate authority. A run has one set of stand-ins per scenario slot (see
// [Services.Slots]): a scenario resets its slot's stand-ins before it starts, and each of its replicas
// reaches them through its own egress proxy and the scenario's double, which records, attributes and faults
// their requests like its own. Two scenarios that run at once therefore never share a fake's records or a
// stub scenario's state. Connections to any other non-loopback destination are refused (unless the policy
// allows them) and recorded as EgressAttempts.
type Services struct {
	Specs  []services.Spec
	Policy egress.Policy

	standIns map[string]services.StandIn // this slot's stand-ins, by service name
	slot     int                         // this slot's index; 0 is the set StartServices returns
	run      *serviceRun
}

// serviceRun is what the slots of one run share: the CA, its bundle on disk, and every slot.
type serviceRun struct {
	ca     *egress.CA
	dir    string
	bundle string

	mu    sync.Mutex
	slots []*Services
}

// StartServices starts the stand-in of every declared service (the first slot's) and makes the run's CA.
// Close stops them, and those of every slot added since.
func StartServices(ctx context.Context, specs []services.Spec, policy egress.Policy) (*Services, error) {
	ca, err := egress.NewCA()
	if err != nil {
		return nil, err
	}
	run := &serviceRun{ca: ca}
	s := &Services{Specs: specs, Policy: policy, standIns: map[string]services.StandIn{}, run: run}
	run.slots = []*Services{s}
	if run.dir, err = os.MkdirTemp("", "astrabox-services-"); err != nil {
		return nil, fmt.Errorf("make the run's CA directory: %w", err)
	}
	if run.bundle, err = ca.WriteBundle(run.dir, egress.SystemRoots(os.Getenv)); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start starts this slot's stand-in of every service, in declaration order; on an error the ones started are
// stopped again.
func (s *Services) start(ctx context.Context) error {
	for _, spec := range s.Specs {
		si, err := services.StartInstance(ctx, spec, s.slot+1)
		if err != nil {
			s.closeStandIns()
			return err
		}
		s.standIns[spec.Name] = si
	}
	return nil
}

// Slots returns the stand-ins of n scenario slots, the first being the run's own set: one more instance of
// every service per slot (each fake its own process group on its own port, each stubs directory its own
// scenario state), started at once the first time they are asked for, and stopped by the run's Close. Two
// scenarios given different slots never see each other's state. Every caller gets the same first n sets, so
// one set of workers at a time may use them (as a run does). On a nil Services (no services for this run) it
// returns n nils.
func (s *Services) Slots(ctx context.Context, n int) ([]*Services, error) {
	n = max(1, n)
	if s == nil {
		return make([]*Services, n), nil
	}
	r := s.run
	r.mu.Lock()
	defer r.mu.Unlock()
	var added []*Services
	for i := len(r.slots); i < n; i++ {
		added = append(added, &Services{Specs: s.Specs, Policy: s.Policy, standIns: map[string]services.StandIn{}, slot: i, run: r})
	}
	errs := make([]error, len(added))
	var wg sync.WaitGroup
	for i, sl := range added {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = sl.start(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, sl := range added {
			sl.closeStandIns()
		}
		return nil, err
	}
	r.slots = append(r.slots, added...)
	return append([]*Services(nil), r.slots[:n]...), nil
}

// Close stops the stand-ins of every slot of the run and removes the CA bundle. Only the Services that
// StartServices returned closes anything; closing another slot does nothing (the run's Close stops it).
func (s *Services) Close() error {
	if s == nil || s.slot != 0 {
		return nil
	}
	s.run.mu.Lock()
	slots := append([]*Services(nil), s.run.slots...)
	s.run.mu.Unlock()
	var errs []error
	for _, sl := range slots {
		errs = append(errs, sl.closeStandIns())
	}
	if s.run.dir != "" {
		errs = append(errs, os.RemoveAll(s.run.dir))
	}
	return errors.Join(errs...)
}

// closeStandIns stops this slot's stand-ins.
func (s *Services) closeStandIns() error {
	var errs []error
	for _, name := range s.names() {
		errs = append(errs, s.standIns[name].Close())
	}
	return errors.Join(errs...)
}

// Alive reports a stand-in of any slot of the run that can no longer answer (a fake that died mid-run), with
// its output.
func (s *Services) Alive() error {
	if s == nil {
		return nil
	}
	s.run.mu.Lock()
	slots := append([]*Services(nil), s.run.slots...)
	s.run.mu.Unlock()
	for _, sl := range slots {
		for _, name := range sl.names() {
			if err := sl.standIns[name].Alive(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Services) names() []string {
	out := make([]string, 0, len(s.standIns))
	for n := range s.standIns {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// reset clears this slot's stand-ins' state before a scenario.
func (s *Services) reset(ctx context.Context) error {
	if s == nil {
		return nil
	}
	for _, name := range s.names() {
		if err := s.standIns[name].Reset(ctx); err != nil {
			return err
		}
	}
	return nil
}

// upstreams is the double's view of the stand-ins.
func (s *Services) upstreams() map[string]double.Upstream {
	if s == nil {
		return nil
	}
	out := map[string]double.Upstream{}
	for _, spec := range s.Specs {
		out[spec.Name] = services.Upstream(spec, s.standIns[spec.Name])
	}
	return out
}

// prerequisites are the declared services that hold consent, by name.
func (s *Services) prerequisites() []ServicePrerequisite {
	if s == nil {
		return nil
	}
	var out []ServicePrerequisite
	for _, spec := range s.Specs {
		if spec.Consent != nil {
			out = append(out, ServicePrerequisite{Service: spec.Name, Prerequisite: PrerequisiteConsent})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out
}

// spec returns a declared service by name.
func (s *Services) spec(name string) (services.Spec, bool) {
	if s != nil {
		for _, sp := range s.Specs {
			if sp.Name == name {
				return sp, true
			}
		}
	}
	return services.Spec{}, false
}

// proxy starts a replica's egress proxy in front of the scenario's double and returns the environment the
// replica needs to use it.
func (s *Services) proxy(replica string, dbl *double.Double, observe func(egress.Record)) (*egress.Proxy, []string, error) {
	base, err := dbl.URL(replica)
	if err != nil {
		return nil, nil, fmt.Errorf("open the double for replica %s: %w", replica, err)
	}
	var svcs []egress.Service
	for _, spec := range s.Specs {
		svc, err := services.ThroughDouble(spec, base)
		if err != nil {
			return nil, nil, err
		}
		svcs = append(svcs, svc)
	}
	px, err := egress.Start(egress.Options{Replica: replica, Services: svcs, CA: s.run.ca, Policy: s.Policy, Observe: observe})
	if err != nil {
		return nil, nil, err
	}
	var env []string
	vars := px.Env(s.run.bundle)
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return px, env, nil
}

// EgressAttempt is a connection a replica made to a destination that is not a declared service: refused
// (the default) or let through (egress = "allow"). Only the destination and the callback are kept.
type EgressAttempt struct {
	Replica string `json:"replica"`
	Step    int    `json:"step"`
	// Call and Callback are the callback in flight on the replica when the attempt arrived ("" for none).
	Call     string `json:"call,omitempty"`
	Callback string `json:"callback,omitempty"`
	Scheme   string `json:"scheme"`
	Host     string `json:"host"`
	Method   string `json:"method"`
	Path     string `json:"path,omitempty"`
	Refused  bool   `json:"refused"`
	// File, Line and Function are the innermost frame in the provider's own files that opened the
	// connection, as the harness reported it ("" when it did not know: no provider frame on the stack).
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Function string `json:"function,omitempty"`
	// conn names the connection to the proxy, to find the harness's record of it.
	conn conntag.Ref
}

// egressLog collects a scenario's egress attempts from the replicas' proxies.
type egressLog struct {
	mu       sync.Mutex
	attempts []EgressAttempt
}

func (l *egressLog) add(a EgressAttempt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts = append(l.attempts, a)
}

// sorted returns the attempts in an order that does not depend on goroutine scheduling.
func (l *egressLog) sorted() []EgressAttempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]EgressAttempt(nil), l.attempts...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Step != b.Step {
			return a.Step < b.Step
		}
		if a.Replica != b.Replica {
			return a.Replica < b.Replica
		}
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		return a.Method+a.Path < b.Method+b.Path
	})
	return out
}

// observeEgress records the attempts of a replica's proxy that did not reach a declared service (the
// declared ones reach the double, which records them).
func (p *platform) observeEgress(rec egress.Record) {
	if rec.Service != "" {
		return
	}
	a := EgressAttempt{Replica: rec.Replica, Scheme: rec.Scheme, Host: rec.Host, Method: rec.Method, Path: rec.Path, Refused: rec.Refused, conn: rec.Conn}
	if call, ok := p.dbl.InFlight(rec.Replica); ok {
		a.Call, a.Callback = call.CallID, call.Callback
		fmt.Sscanf(call.Step, "%d:", &a.Step)
	}
	p.egress.add(a)
}

// serviceSecrets are the secrets the stand-ins handed out in answers to the provider (field names or
// pointers of each service's secret-fields), in request order.
func (p *platform) serviceSecrets(reqs []double.Request) []secrets.Secret {
	var out []secrets.Secret
	seen := map[string]bool{}
	for _, rq := range reqs {
		if rq.Service == "" || len(rq.Answer) == 0 {
			continue
		}
		spec, ok := p.o.Services.spec(rq.Service)
		if !ok {
			continue
		}
		for _, v := range services.ResponseSecrets(rq.Answer, spec.SecretFields) {
			if !seen[v] {
				seen[v] = true
				out = append(out, secrets.Secret{Value: v, Origin: fmt.Sprintf("a value service %s answered to %s %s", rq.Service, rq.Method, rq.Path), Kind: secrets.KindServiceValue})
			}
		}
	}
	return out
}
