package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ContextArg is the context argument the platform hands a callback (args["context"]: the seams'
// RuntimeSessionContext, RuntimeTurnContext, the user-action context and SynchronizeContext) as one typed
// record: each callback's context sets its own fields. Checks read it through CallRecord.Context, never
// through the untyped map.
type ContextArg struct {
	SessionID   string `json:"session_id,omitempty"`
	AgentID     string `json:"agent_id,omitempty"`
	PrincipalID string `json:"principal_id,omitempty"`
	// OwnerID is the Session owner of the user-action callbacks' context.
	OwnerID string `json:"owner_id,omitempty"`
	// SandboxID is prepare_session's sandbox; SandboxHandle prepare_turn's and Sandbox synchronize's.
	SandboxID     string      `json:"sandbox_id,omitempty"`
	SandboxHandle *SandboxArg `json:"sandbox_handle,omitempty"`
	Sandbox       *SandboxArg `json:"sandbox,omitempty"`
	// Trigger is why prepare_session ran ("claim", "cold_start", "sandbox_replacement", ...).
	Trigger string `json:"trigger,omitempty"`
	// FilePathsDir is where context.file_path resolves names (prepare_session, prepare_turn).
	FilePathsDir string `json:"file_paths_dir,omitempty"`
	// DispatchAttemptID and Refresh are prepare_turn's attempt and whether the call renews its material.
	DispatchAttemptID string `json:"dispatch_attempt_id,omitempty"`
	Refresh           bool   `json:"refresh,omitempty"`
	// Deadline is the wall-clock deadline (0 in the record: the one sent is stamped at the call).
	Deadline          float64           `json:"deadline,omitempty"`
	RuntimeGeneration string            `json:"runtime_generation,omitempty"`
	WorkloadIdentity  *WorkloadIdentity `json:"workload_identity,omitempty"`
	Config            map[string]any    `json:"config,omitempty"`
	// Operation, CreatorUserID, ConfigVersion, PreparationID, Packages and SkillsPath are synchronize's.
	Operation     *OperationArg `json:"operation,omitempty"`
	CreatorUserID string        `json:"creator_user_id,omitempty"`
	ConfigVersion int           `json:"config_version,omitempty"`
	PreparationID string        `json:"preparation_id,omitempty"`
	Packages      []any         `json:"packages,omitempty"`
	SkillsPath    *string       `json:"skills_path,omitempty"`
}

// SandboxArg is the sandbox a context names.
type SandboxArg struct {
	SandboxID string `json:"sandbox_id"`
	Home      string `json:"home"`
	Workspace string `json:"workspace"`
}

// WorkloadIdentity is the Session's workload identity in prepare_session's context: its subject and its
// token, a per-Session secret (History.Secrets holds it too).
type WorkloadIdentity struct {
	Subject string `json:"subject"`
	Token   string `json:"token"`
}

// OperationArg is the operation a synchronize (in its context) or a recover (its own argument) is about.
type OperationArg struct {
	AgentID     string  `json:"agent_id"`
	OperationID string  `json:"operation_id"`
	Deadline    float64 `json:"deadline"`
}

// decodeArg decodes one argument of a call strictly: a key without a field of the typed record is an error,
// so a field the platform starts to send cannot be missed by the checks that read the record.
func decodeArg(name string, v any, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode the %s argument: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("decode the %s argument: %w", name, err)
	}
	return nil
}

// DecodeContext decodes a callback's context argument (args["context"]; zero when it has none).
func DecodeContext(args map[string]any) (ContextArg, error) {
	var out ContextArg
	v, ok := args["context"]
	if !ok || v == nil {
		return out, nil
	}
	return out, decodeArg("context", v, &out)
}

// Context is the call's context argument as its typed record (zero when the callback has none). The
// platform decodes every context it sends before sending it (see checkArgs), so a recorded call's context
// always decodes; an error means a record the platform did not make, and names the call.
func (c *CallRecord) Context() (ContextArg, error) {
	ctx, err := DecodeContext(c.Args)
	if err != nil {
		return ctx, fmt.Errorf("%s (call %s): %w", c.Method, c.Key, err)
	}
	return ctx, nil
}

// Operation is the operation a synchronize (its context's) or a recover (its argument) is about; nil for
// other callbacks.
func (c *CallRecord) Operation() (*OperationArg, error) {
	switch c.Method {
	case CallSynchronize:
		ctx, err := c.Context()
		return ctx.Operation, err
	case CallRecover:
		v, ok := c.Args["operation"]
		if !ok || v == nil {
			return nil, nil
		}
		var op OperationArg
		if err := decodeArg("operation", v, &op); err != nil {
			return nil, fmt.Errorf("%s (call %s): %w", c.Method, c.Key, err)
		}
		return &op, nil
	}
	return nil, nil
}

// checkArgs decodes the arguments the platform is about to send a callback into their typed records, so
// that what the checks read of a recorded call is exactly what was sent. A failure is the kit's own bug (an
// argument builder and ContextArg disagree).
func checkArgs(method Callback, args map[string]any) error {
	rec := CallRecord{Method: method, Key: "-", Args: args}
	if _, err := rec.Context(); err != nil {
		return err
	}
	_, err := rec.Operation()
	return err
}
