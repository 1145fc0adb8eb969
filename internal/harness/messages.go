package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ProtocolVersion is the harness protocol version this package speaks.
const ProtocolVersion = 1

// Hello is the first message of the harness: who it is.
type Hello struct {
	Kind           string `json:"kind"`
	Protocol       int    `json:"protocol"`
	Cookie         string `json:"cookie"`
	PID            int    `json:"pid"`
	Python         []int  `json:"python"`
	Implementation string `json:"implementation"`
	Executable     string `json:"executable"`
}

// PythonVersion returns the interpreter version as "3.11.7".
func (h Hello) PythonVersion() string {
	s := ""
	for i, n := range h.Python {
		if i > 0 {
			s += "."
		}
		s += fmt.Sprint(n)
	}
	return s
}

// envelope is the part of every message that tells its kind.
type envelope struct {
	Kind string `json:"kind"`
}

// returnedMsg says that the callback of call ID has ended (returned or raised): it comes before the call's
// reply, which the harness then builds and sends.
type returnedMsg struct {
	Kind string `json:"kind"`
	ID   int64  `json:"id"`
}

// replyMsg is the wire form of a reply.
type replyMsg struct {
	Kind         string          `json:"kind"`
	ID           int64           `json:"id"`
	OK           bool            `json:"ok"`
	Value        json.RawMessage `json:"value"`
	Error        *PyError        `json:"error"`
	DurationNS   int64           `json:"duration_ns"`
	Observations Observations    `json:"observations"`
	// Markers is false when the harness proved that nothing but itself wrote since the last sync marker and
	// so wrote none for this call (absent means true).
	Markers *bool `json:"markers"`
	// CancelReceived is true when a cancel from Go reached the call while it was in flight (its task was
	// cancelled); false when the call had already finished or could not be interrupted (synchronous code).
	CancelReceived bool `json:"cancel_received"`
	// HeldPastDeadline is true when the callback's code ended at or after its deadline (timeout_s, on the
	// harness's loop clock) in a stretch that began before it: it held the event loop through the deadline,
	// so no cancel could reach it. False when the loop ran once the deadline had passed while it was pending.
	HeldPastDeadline bool `json:"held_past_deadline"`
	// WaitedUnits are the units of the call's work the callback waited for (Reply.WaitedUnits).
	WaitedUnits []int64 `json:"waited_units"`
	// Exit is set when the callback raised SystemExit or KeyboardInterrupt: the harness ends the process
	// right after this reply, as the platform's host would.
	Exit *ExitInfo `json:"exit,omitempty"`
	// Coverage is what the provider's own code ran (callback replies only; nil when coverage is off).
	Coverage *CoverageReport `json:"coverage"`
}

// ExitInfo says how a callback's SystemExit or KeyboardInterrupt ends the harness process: with exit status
// Code, or by Signal ("SIGINT" for KeyboardInterrupt).
type ExitInfo struct {
	// Exception is "SystemExit" or "KeyboardInterrupt".
	Exception string `json:"exception"`
	Code      int    `json:"code"`
	Signal    string `json:"signal,omitempty"`
}

// Exception names in ExitInfo.
const (
	ExitSystemExit        = "SystemExit"
	ExitKeyboardInterrupt = "KeyboardInterrupt"
)

type backgroundMsg struct {
	Kind         string       `json:"kind"`
	Observations Observations `json:"observations"`
}

type callMsg struct {
	Kind     string  `json:"kind"`
	ID       int64   `json:"id"`
	Method   string  `json:"method"`
	Args     any     `json:"args"`
	TimeoutS float64 `json:"timeout_s,omitempty"`
}

type cancelMsg struct {
	Kind string `json:"kind"`
	ID   int64  `json:"id"`
}

type shutdownMsg struct {
	Kind string `json:"kind"`
}

// PyError is a Python exception raised by the provider (or by loading it).
type PyError struct {
	Type       string      `json:"type"`
	Message    string      `json:"message"`
	Repr       string      `json:"repr"`
	Traceback  string      `json:"traceback"`
	Cancelled  bool        `json:"cancelled"`
	Frames     []Frame     `json:"frames"`
	UserAction *UserAction `json:"user_action"`
}

// Error returns "Type: message".
func (e *PyError) Error() string { return e.Type + ": " + e.Message }

// Frame is one stack frame in the provider's own code.
type Frame struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Function string `json:"function"`
}

// UserAction is the payload of PreparationUserActionRequired or of a
// SessionUserActionState.user_action.
type UserAction struct {
	Message string  `json:"message"`
	URL     *string `json:"url,omitempty"`
	Status  string  `json:"status"`
}

// Observations are facts the harness recorded while the provider ran.
type Observations struct {
	Logs      []LogRecord     `json:"logs"`
	Warnings  []WarningRecord `json:"warnings"`
	Audit     []AuditEvent    `json:"audit"`
	Leftovers Leftovers       `json:"leftovers"`
	Dropped   int64           `json:"dropped"`
	// Connections are the loopback TCP connections the provider's code opened (absent when there were
	// none): the platform matches them to the requests that reached its listeners over them.
	Connections []Connection `json:"connections,omitempty"`
	// Sends say which call's code wrote each run of bytes on those connections (absent when none).
	Sends []Send `json:"sends,omitempty"`
	// TLS are the handshakes with a declared service whose certificate verification failed (absent when
	// none): the client did not trust the run's certificate authority.
	TLS []TLSFailure `json:"tls,omitempty"`
	// Native are the modules that resolve names or connect in C, below the harness's socket hooks, first
	// seen loaded during this call (absent when none).
	Native []NativeClient `json:"native,omitempty"`
}

// Empty reports whether nothing was observed.
func (o Observations) Empty() bool {
	return len(o.Logs) == 0 && len(o.Warnings) == 0 && len(o.Audit) == 0 && o.Leftovers.Empty() && o.Dropped == 0 &&
		len(o.Connections) == 0 && len(o.Sends) == 0 && len(o.TLS) == 0 && len(o.Native) == 0
}

// Merge appends the observations of b to o.
func (o *Observations) Merge(b Observations) {
	o.Logs = append(o.Logs, b.Logs...)
	o.Warnings = append(o.Warnings, b.Warnings...)
	o.Audit = append(o.Audit, b.Audit...)
	o.Leftovers.Threads = append(o.Leftovers.Threads, b.Leftovers.Threads...)
	o.Leftovers.Tasks = append(o.Leftovers.Tasks, b.Leftovers.Tasks...)
	o.Leftovers.Timers = append(o.Leftovers.Timers, b.Leftovers.Timers...)
	o.Leftovers.Children = append(o.Leftovers.Children, b.Leftovers.Children...)
	o.Dropped += b.Dropped
	o.Connections = append(o.Connections, b.Connections...)
	o.Sends = append(o.Sends, b.Sends...)
	o.TLS = append(o.TLS, b.TLS...)
	o.Native = append(o.Native, b.Native...)
}

// TLSFailure is a TLS handshake with a declared service whose certificate verification failed in the
// provider's process: the client did not trust the run's certificate authority (docs/services.md).
type TLSFailure struct {
	// Host is the server name the client verified.
	Host string `json:"host"`
	// Library is the top-level package the provider called that made the connection ("botocore", "httpx";
	// "ssl" when only the standard library was on the stack); ContextLibrary the one that loaded the TLS
	// context's trust store ("" when none was loaded through Python).
	Library        string `json:"library"`
	ContextLibrary string `json:"context_library"`
	// Trust lists what was loaded into the context ("the CA file /x/cacert.pem", "OpenSSL's default trust
	// store (SSL_CERT_FILE=/y)").
	Trust []string `json:"trust"`
	// RunCA tells whether the run's authority was among the loaded certificates.
	RunCA bool `json:"run_ca"`
	// Message is the verification error's text.
	Message string `json:"message"`
	// File, Line and Function are the innermost frame of the provider's own files ("" when none).
	File        string `json:"file"`
	Line        int    `json:"line"`
	Function    string `json:"function"`
	Call        *int64 `json:"call"`
	AfterReturn bool   `json:"after_return"`
}

// NativeClient is a module whose network code is C (grpcio's core, c-ares, libcurl, libpq), seen loaded in
// the provider's process: its lookups and connections do not pass the harness's socket hooks.
type NativeClient struct {
	// Module is the module found in sys.modules ("grpc._cython.cygrpc"); Library names the library.
	Module      string `json:"module"`
	Library     string `json:"library"`
	Call        *int64 `json:"call"`
	AfterReturn bool   `json:"after_return"`
}

// LogRecord is one logging record created by the provider.
type LogRecord struct {
	Logger      string  `json:"logger"`
	Level       string  `json:"level"`
	LevelNo     int     `json:"levelno"`
	Message     string  `json:"message"`
	ExcText     *string `json:"exc_text"`
	File        string  `json:"file"`
	Line        int     `json:"line"`
	Function    string  `json:"function"`
	Thread      string  `json:"thread"`
	Call        *int64  `json:"call"`
	AfterReturn bool    `json:"after_return"`
}

// WarningRecord is one warning shown while the provider ran.
type WarningRecord struct {
	Category    string `json:"category"`
	Message     string `json:"message"`
	File        string `json:"file"`
	Line        int    `json:"line"`
	Call        *int64 `json:"call"`
	AfterReturn bool   `json:"after_return"`
}

// AuditEvent is one PEP 578 audit event the provider caused.
type AuditEvent struct {
	Event       string `json:"event"`
	Summary     string `json:"summary"`
	File        string `json:"file"`
	Line        int    `json:"line"`
	Function    string `json:"function"`
	Call        *int64 `json:"call"`
	AfterReturn bool   `json:"after_return"`
}

// Send is a run of bytes that one call's code wrote on a loopback connection the harness reported: from
// Offset up to End. Bytes in no run (their record was lost with a process killed mid-call) are nobody's.
// Offsets count the plaintext the provider wrote
// (before TLS), as the kit's listeners count what they read after decryption (package conntag), so a
// request without the X-Astrabox-Call header is given to the call whose run holds its first byte.
type Send struct {
	// Seq is the Connection's Seq (the same harness process).
	Seq int64 `json:"seq"`
	// Offset and End are the plaintext offsets of the run's first byte and past its last in the
	// connection's stream.
	Offset int64 `json:"offset"`
	End    int64 `json:"end"`
	// Lost marks the offset from which the harness stopped counting (a write failed part-way).
	Lost bool `json:"lost,omitempty"`
	// Call is the harness call whose code wrote the run (nil outside any call).
	Call        *int64 `json:"call"`
	AfterReturn bool   `json:"after_return"`
	// Issuer is the unit of the call's work that wrote the run (nil outside any call's work).
	Issuer *Issuer `json:"issuer,omitempty"`
}

// Connection is one loopback TCP connection the provider's code opened: the harness saw its socket.connect
// (binding the socket to an ephemeral port first when it was unbound) and reports which call's code opened
// it and from where, so that a request sent over it without the X-Astrabox-Call header (a raw socket, an
// asyncio stream) is attributed to that call and an egress attempt to that line (see package conntag).
type Connection struct {
	// Seq numbers the connections of one harness process in the order they were opened, from 1.
	Seq int64 `json:"seq"`
	// Port is the socket's local port; DestPort the loopback port it connected to.
	Port     int `json:"port"`
	DestPort int `json:"dest_port"`
	// File, Line and Function are the innermost frame in the provider's own files that opened it ("" and 0
	// when no provider code was on the stack, for example a resolver job on an executor thread).
	File     string `json:"file"`
	Line     int    `json:"line"`
	Function string `json:"function"`
	// Call is the harness call whose code opened the connection (nil outside any call).
	Call        *int64 `json:"call"`
	AfterReturn bool   `json:"after_return"`
	// Issuer is the unit of the call's work that opened it (nil outside any call's work).
	Issuer *Issuer `json:"issuer,omitempty"`
}

// Leftovers is work a callback left running after it returned.
type Leftovers struct {
	Threads  []LeftoverThread `json:"threads"`
	Tasks    []LeftoverTask   `json:"tasks"`
	Timers   []LeftoverTimer  `json:"timers"`
	Children []LeftoverChild  `json:"children"`
}

// Empty reports whether nothing was left over.
func (l Leftovers) Empty() bool {
	return len(l.Threads) == 0 && len(l.Tasks) == 0 && len(l.Timers) == 0 && len(l.Children) == 0
}

// LeftoverThread is a thread started by a callback and still alive.
type LeftoverThread struct {
	Name   string `json:"name"`
	Daemon bool   `json:"daemon"`
	Target string `json:"target"`
	File   string `json:"file"`
	Line   int    `json:"line"`
}

// LeftoverTask is an asyncio task started by a callback and still pending.
type LeftoverTask struct {
	Name string `json:"name"`
	Coro string `json:"coro"`
	File string `json:"file"`
	Line int    `json:"line"`
}

// LeftoverTimer is a pending loop.call_later/call_at handle.
type LeftoverTimer struct {
	Callback string  `json:"callback"`
	WhenS    float64 `json:"when_s"`
}

// LeftoverChild is a child process of the harness still alive.
type LeftoverChild struct {
	PID     int    `json:"pid"`
	Cmdline string `json:"cmdline"`
	// Idle is set in a settle's Remaining for a child the harness stopped waiting for: asleep through the
	// whole idle window (ChildIdleWindow) with no CPU used and no child or socket of its own.
	Idle bool `json:"idle,omitempty"`
}

// ChildIdleWindow is how long a settle watches a leftover child process that is asleep, uses no CPU and has
// no child or socket of its own before it stops waiting for it (the harness's IDLE_WINDOW): such a process
// (an unwaited `sleep`, a helper daemon waiting for a signal) does nothing a callback must settle, and
// waiting out the whole settle bound for it after every call only slows the run.
const ChildIdleWindow = 500 * time.Millisecond

// LoadArgs are the arguments of the load method.
type LoadArgs struct {
	// Target is "pkg.module:Attr.attr".
	Target string `json:"target"`
	// Paths are absolute code roots prepended to sys.path.
	Paths []string `json:"paths"`
	// ProjectRoot is the absolute project directory.
	ProjectRoot string `json:"project_root"`
	// ForceDebugLogging sets the root logger to DEBUG at load.
	ForceDebugLogging bool `json:"force_debug_logging"`
	// Coverage, when set, turns on coverage of the provider's own code (see CoverageOptions).
	Coverage *CoverageOptions `json:"coverage,omitempty"`
}

// LoadInfo is the value of a successful load.
type LoadInfo struct {
	ModuleFile      string                `json:"module_file"`
	Qualname        string                `json:"qualname"`
	File            string                `json:"file"`
	Line            int                   `json:"line"`
	IsClass         bool                  `json:"is_class"`
	IsSubclass      bool                  `json:"is_subclass"`
	Instantiated    bool                  `json:"instantiated"`
	Name            *string               `json:"name"`
	NameIsClassattr bool                  `json:"name_is_classattr"`
	NameError       *string               `json:"name_error"`
	ProviderRoots   []string              `json:"provider_roots"`
	Methods         map[string]MethodInfo `json:"methods"`
}

// MethodInfo describes one of the seven callbacks on the loaded provider.
type MethodInfo struct {
	Overridden bool   `json:"overridden"`
	Async      bool   `json:"async"`
	File       string `json:"file"`
	Line       int    `json:"line"`
}

// Sandbox operations (SandboxRequest.Op).
const (
	OpReadFile  = "read_file"
	OpWriteFile = "write_file"
	OpExists    = "exists"
	OpListDir   = "list_dir"
	OpRemove    = "remove"
)

// SandboxRequest is a SandboxHandle method call made by the provider during
// call Call.
type SandboxRequest struct {
	Kind      string `json:"kind"`
	ID        int64  `json:"id"`
	Call      int64  `json:"call"`
	SandboxID string `json:"sandbox_id"`
	Op        string `json:"op"`
	Path      string `json:"path"`
	// Content is the decoded content_b64 of write_file.
	Content []byte `json:"content_b64,omitempty"`
	Mode    *int   `json:"mode,omitempty"`
}

// SandboxResponse answers a SandboxRequest. Value is {"content_b64": ...}
// for read_file (use ReadFileValue), a bool for exists, a list of names for
// list_dir, nil otherwise. Error, when set, makes the handle raise.
type SandboxResponse struct {
	OK    bool          `json:"ok"`
	Value any           `json:"value"`
	Error *SandboxError `json:"error"`
}

// ReadFileValue builds the read_file value for a SandboxResponse.
func ReadFileValue(content []byte) any {
	return map[string][]byte{"content_b64": content}
}

// SandboxError is raised in the provider as the builtin exception Type:
// FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError
// or OSError.
type SandboxError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type sandboxReplyMsg struct {
	Kind  string        `json:"kind"`
	ID    int64         `json:"id"`
	OK    bool          `json:"ok"`
	Value any           `json:"value"`
	Error *SandboxError `json:"error"`
}

// ResultKind is the kind of value a callback returned (Result.Type), as the harness names it.
type ResultKind string

// The result kinds the harness reports (docs/protocol.md, "Reply value by result type").
const (
	KindPlan            ResultKind = "RuntimePreparationPlan"
	KindMaterials       ResultKind = "RuntimeMaterials"
	KindUserActionState ResultKind = "SessionUserActionState"
	KindBool            ResultKind = "bool"
	KindNone            ResultKind = "none"
	KindCoroutine       ResultKind = "coroutine"
	KindOther           ResultKind = "other"
)

// ResultKinds lists every result kind.
func ResultKinds() []ResultKind {
	return []ResultKind{KindPlan, KindMaterials, KindUserActionState, KindBool, KindNone, KindCoroutine, KindOther}
}

// Of tells whether r is a result of this kind (false for nil).
func (k ResultKind) Of(r *Result) bool { return r != nil && r.Type == k }

// String is the kind's name.
func (k ResultKind) String() string { return string(k) }

// Result is the decoded reply value of a callback (see Reply.Result): a union over ResultKind, of which
// only the fields of its Type are set. The harness's Python mirror is records.Result (a test holds the two
// to the same fields).
type Result struct {
	Type    ResultKind `json:"type"`
	Repr    string     `json:"repr"`
	WasSync bool       `json:"was_sync"`

	// RuntimePreparationPlan
	SessionBound     bool            `json:"session_bound"`
	Declaration      json.RawMessage `json:"declaration"`
	DeclarationError *string         `json:"declaration_error"`

	// RuntimeMaterials
	Files       []MaterialFile    `json:"files"`
	Environment map[string]string `json:"environment"`
	// TurnValiditySeconds is null, a number, or one of the strings "inf",
	// "-inf", "nan".
	TurnValiditySeconds json.RawMessage `json:"turn_validity_seconds"`

	// SessionUserActionState
	Ready      bool            `json:"ready"`
	UserAction json.RawMessage `json:"user_action"`
	Actions    []ActionCommand `json:"actions"`

	// bool
	Value bool `json:"value"`

	// other
	PythonType string `json:"python_type"`

	// Problems are type anomalies the harness found while reading the value (a str where bytes belong, an
	// environment value that is not a str, ...); the value's fields hold wire-safe placeholders for them.
	Problems []string `json:"problems,omitempty"`

	// TypeErrors lists the values of a wrong type in the returned object (RuntimeMaterials: a file whose
	// content is a str, an int or None, a non-str environment value), for the checks to judge.
	TypeErrors []TypeError `json:"type_errors,omitempty"`
}

// Name names what a callback returned for messages: the Python type of an "other" value, the kind
// otherwise, and "nothing" for no result.
func (r *Result) Name() string {
	switch {
	case r == nil:
		return "nothing"
	case r.Type == KindOther && r.PythonType != "":
		return r.PythonType
	}
	return string(r.Type)
}

// TurnValidity is the turn_validity_seconds of a RuntimeMaterials result, decoded once for the platform
// (which refuses a bad one and schedules refreshes by a good one) and for the checks that judge it.
type TurnValidity struct {
	// Set says a value was given: not absent, not null.
	Set bool
	// Seconds is the value when it is a positive finite number, 0 otherwise.
	Seconds float64
	// Problem says why a set value is not a positive finite number ("is inf", "is -1", "is not a number");
	// "" when it is one.
	Problem string
}

// Valid tells whether a value was given and it is a positive finite number.
func (v TurnValidity) Valid() bool { return v.Set && v.Problem == "" }

// DecodeTurnValidity decodes turn_validity_seconds as the harness writes it: absent or null, a JSON number,
// or one of the strings "inf", "-inf", "nan" for a float JSON cannot carry.
func DecodeTurnValidity(raw json.RawMessage) TurnValidity {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return TurnValidity{}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return TurnValidity{Set: true, Problem: "is " + s}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return TurnValidity{Set: true, Problem: "is not a number"}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return TurnValidity{Set: true, Problem: "is " + t}
	}
	return TurnValidity{Set: true, Seconds: v}
}

// Validity is the result's turn_validity_seconds decoded (see DecodeTurnValidity); not Set for a nil result.
func (r *Result) Validity() TurnValidity {
	if r == nil {
		return TurnValidity{}
	}
	return DecodeTurnValidity(r.TurnValiditySeconds)
}

// TypeError is one value of the wrong type in a callback's result.
type TypeError struct {
	// Field is where it sits ("files[0].content", "environment[NAME]").
	Field string `json:"field"`
	// Expected is the type the seam requires ("bytes", "str", "RuntimeFile"); Got is the Python type found.
	Expected string `json:"expected"`
	Got      string `json:"got"`
}

// SettleResult is the value of a settle call: whether the work the given calls left running ended within
// the bound, what still runs, and how long the harness waited.
type SettleResult struct {
	Settled   bool      `json:"settled"`
	Remaining Leftovers `json:"remaining"`
	WaitedS   float64   `json:"waited_s"`
}

// MaterialFile is one RuntimeFile of RuntimeMaterials.
type MaterialFile struct {
	Name    string `json:"name"`
	Content []byte `json:"content_b64"`
}

// ActionCommand is one SessionUserActionCommand.
type ActionCommand struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}
