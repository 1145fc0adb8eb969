package simulate

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/services"
)

// History is everything that happened while a scenario ran: each platform step, each callback with its
// replica, arguments, result and observations, each sandbox operation and file delivery, and each request the
// deployment double received. Checks decide over histories. The in-memory history holds secrets in clear;
// whoever prints it must mask them (see Secrets).
type History struct {
	Scenario string   `json:"scenario"`
	Seed     int64    `json:"seed"`
	Provider string   `json:"provider"`
	Replicas int      `json:"replicas"`
	Engine   string   `json:"engine"`
	Events   []*Event `json:"events"`
	// Secrets are the values planted as secrets during the run (workload identity tokens, credentials the
	// double issued, secret configuration fields), with where each came from.
	Secrets []secrets.Secret `json:"-"`
	// Requests are the deployment double's recorded requests, in arrival order.
	Requests []Request `json:"requests"`
	// Inventory is what waiting (unclaimed) inventory held at the end of the run.
	Inventory []InventoryBox `json:"inventory"`
	// Played is the scenario as played: every fill replaced by the concrete steps and values it stood for.
	// Replaying it gives the same history.
	Played *Scenario `json:"played,omitempty"`
	// Aborted says why the run stopped early, if it did (the provider could not be loaded, say).
	Aborted string `json:"aborted,omitempty"`
	// Principals are the scenario's principals with the consent state each starts with, sorted by name
	// (typed facts for UA-AUTHORITY; later changes are Event.Consent).
	Principals []ConsentState `json:"principals,omitempty"`
	// Prerequisites are the declared services that hold a prerequisite the suite moves with the identity
	// service's (a principal's consent), by service name: the suite set every principal's starting state and
	// every set_consent there too.
	Prerequisites []ServicePrerequisite `json:"prerequisites,omitempty"`
	// Egress are the connections replicas made to destinations that are not declared services.
	Egress []EgressAttempt `json:"egress,omitempty"`
	// Files are the files replica processes wrote during the run (their host directories and the project
	// directory), with what was read of each, for the secret hunt; excluded from the canonical history (host
	// directories and modification times differ from run to run).
	Files []WrittenFile `json:"-"`
	// Coverage is what the provider's code ran while the platform waited for left-over work (call records
	// carry the rest); excluded from the canonical history.
	Coverage []ReplicaCoverage `json:"-"`
	// ChildWaits are the settles that waited for child processes a callback left running (and nothing else),
	// with what they cost; excluded from the canonical history (the times vary).
	ChildWaits []ChildWait `json:"-"`
}

// ChildWait is one settle that waited only for child processes callbacks left running and did not see them
// end: which calls left them, the children still alive (Idle: the harness stopped waiting because each was
// idle, harness.ChildIdleWindow), and how long the platform waited.
type ChildWait struct {
	Replica  string
	Calls    []string
	Methods  []string
	Children []harness.LeftoverChild
	Waited   time.Duration
}

// ConsentState is a principal's consent at the identity service: at the start of a scenario (History.
// Principals) or after a set_consent step (Event.Consent).
type ConsentState struct {
	Principal string `json:"principal"`
	// Consent is granted or pending.
	Consent string `json:"consent"`
	// OnCheck, when set, is the state a consent check moves the principal to.
	OnCheck string `json:"on_check,omitempty"`
	// Services are the declared services the state was also set at (see History.Prerequisites).
	Services []string `json:"services,omitempty"`
}

// ServicePrerequisite is a declared service that holds a prerequisite of the provider's, which the suite
// moves by a control request to its stand-in.
type ServicePrerequisite struct {
	Service string `json:"service"`
	// Prerequisite is what the service holds (PrerequisiteConsent).
	Prerequisite string `json:"prerequisite"`
}

// PrerequisiteConsent is a principal's consent, the one prerequisite the suite moves.
const PrerequisiteConsent = "consent"

// Consent states.
const (
	ConsentGranted = "granted"
	ConsentPending = "pending"
)

// Event kinds.
const (
	EventStep       = "step"
	EventCall       = "call"
	EventPlatform   = "platform"
	EventDelivery   = "delivery"
	EventEngine     = "engine"
	EventSandbox    = "sandbox"
	EventOutcome    = "outcome"
	EventBackground = "background"
)

// Event is one entry of a history.
type Event struct {
	Seq     int     `json:"seq"`
	Step    int     `json:"step"`
	Op      string  `json:"op,omitempty"`
	At      float64 `json:"at"`
	Kind    string  `json:"kind"`
	Replica string  `json:"replica,omitempty"`
	Message string  `json:"message"`
	// Code is the platform's error code when a step was refused (TURN_PREPARATION_FAILED, ...).
	Code       string                `json:"code,omitempty"`
	Call       *CallRecord           `json:"call,omitempty"`
	Sandbox    *SandboxOp            `json:"sandbox,omitempty"`
	Delivery   *Delivery             `json:"delivery,omitempty"`
	Engine     *EngineStart          `json:"engine,omitempty"`
	Background *harness.Observations `json:"background,omitempty"`
	// Origin is, for a background event, the key of the call whose code started the work that made these
	// observations and this output ("" when they cannot be told apart: several calls' work at once).
	Origin string `json:"origin,omitempty"`
	// Stdout and Stderr are, for a background event, what that work wrote to the process's output while the
	// platform waited for it.
	Stdout string         `json:"stdout,omitempty"`
	Stderr string         `json:"stderr,omitempty"`
	Data   map[string]any `json:"data,omitempty"`
	// Consent is set on the platform event of a set_consent step: the principal's new state.
	Consent *ConsentState `json:"consent,omitempty"`
	// Faults, on a step event, are the kinds of fault the step injects (its callback fault and its double
	// faults); a step without any is fault-free.
	Faults []string `json:"faults,omitempty"`
}

// Outcome is how a callback ended (CallRecord.Outcome).
type Outcome string

// Call outcomes.
const (
	OutcomeReturned  Outcome = "returned"
	OutcomeRaised    Outcome = "raised"
	OutcomeCancelled Outcome = "cancelled" // the platform cancelled it (deadline or cancel fault) and it ended cancelled
	OutcomeOverran   Outcome = "overran"   // the platform cancelled it but it returned or raised something else
	OutcomeHostLoss  Outcome = "host_loss" // the replica was killed while it ran
	OutcomeDied      Outcome = "died"      // the process exited, crashed, hung or ran out of memory
)

// CallRecord is one callback invocation.
type CallRecord struct {
	Key     string         `json:"key"` // "r1#7": replica and harness call id
	Replica string         `json:"replica"`
	Method  Callback       `json:"method"`
	Args    map[string]any `json:"args"`
	Ctx     CallContext    `json:"ctx"`
	Outcome Outcome        `json:"outcome"`
	// Fault is the kind of fault the platform injected into this callback (timeout, cancel, host_loss,
	// supersede), or empty.
	Fault string `json:"fault,omitempty"`
	// Result is set when the callback returned.
	Result *harness.Result `json:"result,omitempty"`
	// Error is set when it raised (cancellation included).
	Error *harness.PyError `json:"error,omitempty"`
	// ProcessError describes how the process failed, for OutcomeDied and OutcomeHostLoss.
	ProcessError string `json:"process_error,omitempty"`
	ProcessKind  string `json:"process_kind,omitempty"`
	// MemoryRSS and MemoryLimit are, for a replica killed at its memory bound, the resident size the kit
	// found and the bound, in bytes.
	MemoryRSS    uint64               `json:"memory_rss,omitempty"`
	MemoryLimit  uint64               `json:"memory_limit,omitempty"`
	Observations harness.Observations `json:"observations"`
	Stdout       string               `json:"stdout,omitempty"`
	Stderr       string               `json:"stderr,omitempty"`
	DeadlineS    float64              `json:"deadline_s"`
	CancelSent   bool                 `json:"cancel_sent"`
	// ApplyMark is the double's count of applied writes when the platform took the callback's reply: a write
	// attributed to this call with a larger ApplyOrder landed after the callback settled. Whether a write
	// landed before that depends on timing; Waited and each Request's Issuer do not.
	ApplyMark int64 `json:"apply_mark"`
	// Waited are the units of the call's work (threads, executor jobs, tasks it started) the callback waited
	// for before its own code ended, as the harness saw it (harness.Reply.WaitedUnits).
	Waited []int64 `json:"waited_units,omitempty"`
	// Duration is wall time; excluded from the canonical history.
	DurationNS int64 `json:"-"`
	// Coverage is what the provider's own code ran, as the reply reported it (nil when coverage is off);
	// excluded from the canonical history.
	Coverage *harness.CoverageReport `json:"-"`
}

// CallContext names what a callback was about.
type CallContext struct {
	Agent     string `json:"agent,omitempty"`
	Session   string `json:"session,omitempty"`
	Principal string `json:"principal,omitempty"`
	Attempt   string `json:"attempt,omitempty"`
	Operation string `json:"operation,omitempty"`
	Trigger   string `json:"trigger,omitempty"`
	Refresh   bool   `json:"refresh,omitempty"`
	SandboxID string `json:"sandbox_id,omitempty"`
	Version   int    `json:"version,omitempty"`
	Box       string `json:"box,omitempty"`
	// Prior says whether the Session's user-action state was read before this turn (UA-AUTHORITY).
	PriorStateRead bool `json:"prior_state_read,omitempty"`
}

// SandboxOp is one SandboxHandle call the provider made.
type SandboxOp struct {
	Call      string `json:"call"`
	SandboxID string `json:"sandbox_id"`
	Op        string `json:"op"`
	Path      string `json:"path"`
	Mode      int    `json:"mode,omitempty"`
	Size      int    `json:"size,omitempty"`
	Error     string `json:"error,omitempty"`
	content   []byte
}

// Content is the bytes written by a write_file operation.
func (s *SandboxOp) Content() []byte { return s.content }

// Delivery is one RuntimeFile the platform wrote into a sandbox.
type Delivery struct {
	SandboxID string `json:"sandbox_id"`
	Session   string `json:"session"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	Mode      string `json:"mode"`
	Owner     string `json:"owner"`
	Size      int    `json:"size"`
	From      string `json:"from"` // call key
}

// EngineStart is an engine activation.
type EngineStart struct {
	Adapter     string   `json:"adapter"`
	Session     string   `json:"session,omitempty"`
	SandboxID   string   `json:"sandbox_id"`
	Fresh       bool     `json:"fresh"` // activated now rather than an already-initialized vendor runtime
	EnvNames    []string `json:"env_names"`
	Probe       []string `json:"probe,omitempty"`
	ProbeEnv    []string `json:"probe_env,omitempty"`
	Initialized bool     `json:"initialized"`
}

// Request is a deployment double request as kept in a history.
type Request struct {
	Seq     int64  `json:"seq"`
	Replica string `json:"replica"`
	// Service names the declared service the request was for ("" = the double's own endpoints), Host the
	// production host:port the provider addressed.
	Service  string `json:"service,omitempty"`
	Host     string `json:"host,omitempty"`
	Call     string `json:"call,omitempty"` // call key, empty for background
	Callback string `json:"callback,omitempty"`
	// InFlight is the call that was in flight on the replica when the request arrived, when that is not the
	// call whose code made it (work a finished call left behind).
	InFlight string `json:"in_flight,omitempty"`
	// Background is set when the request was made by work its call left running, after that call returned
	// (it arrived while the platform waited for that work, or it carries the call's tag while another call
	// or none was in flight).
	Background bool `json:"background,omitempty"`
	// Issuer is the unit of its call's work that issued the request, from the harness's X-Astrabox-Work
	// header or the record of the connection it came over (nil when neither tells).
	Issuer     *harness.Issuer `json:"issuer,omitempty"`
	Method     string          `json:"method"`
	Path       string          `json:"path"`
	Operation  string          `json:"operation,omitempty"`
	Status     int             `json:"status"`
	Applied    bool            `json:"applied"`
	ApplyOrder int64           `json:"apply_order,omitempty"`
	Fenced     bool            `json:"fenced,omitempty"`
	Held       bool            `json:"held,omitempty"`
	Delayed    bool            `json:"delayed,omitempty"`
	Dropped    bool            `json:"dropped,omitempty"`
	Forbidden  bool            `json:"forbidden,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
	// Class is what the request is (a write or a read, its operation, its idempotency key or condition,
	// the resource it acts on), classified once when the history was built (ClassifyRequest).
	Class services.Class `json:"class"`
	body  []byte
}

// ClassifyRequest classifies a request of the double (spec nil) or of a declared service, with its raw
// query, headers and body, and records the result as r.Class: the one place a history's requests are
// classified.
func ClassifyRequest(r *Request, spec *services.Spec, query string, header http.Header, body []byte) {
	r.Class = services.Classify(spec, services.Input{Method: r.Method, Path: r.Path, Query: query, Header: header, Body: body})
}

// RawBody is the request body as received.
func (r *Request) RawBody() []byte { return r.body }

// InventoryBox is a prepared box waiting in inventory (or discarded), with its receipt.
type InventoryBox struct {
	ID                string   `json:"id"`
	Agent             string   `json:"agent"`
	SandboxID         string   `json:"sandbox_id"`
	Generation        string   `json:"generation"`
	EngineInitialized bool     `json:"engine_initialized"`
	State             string   `json:"state"` // waiting, claimed, discarded, invalidated, unresolved
	Files             []string `json:"files"`
}

// Calls returns the call records of the history, in order.
func (h *History) Calls() []*CallRecord {
	var out []*CallRecord
	for _, e := range h.Events {
		if e.Call != nil {
			out = append(out, e.Call)
		}
	}
	return out
}

// CallsOf returns the call records of one callback method.
func (h *History) CallsOf(method Callback) []*CallRecord {
	var out []*CallRecord
	for _, c := range h.Calls() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// RequestsOf returns the double requests attributed to a call.
func (h *History) RequestsOf(callKey string) []Request {
	var out []Request
	for _, r := range h.Requests {
		if r.Call == callKey {
			out = append(out, r)
		}
	}
	return out
}

// EventOf returns the event that holds a call.
func (h *History) EventOf(c *CallRecord) *Event {
	for _, e := range h.Events {
		if e.Call == c {
			return e
		}
	}
	return nil
}
