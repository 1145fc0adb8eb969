package simulate

import (
	"fmt"
	"sort"
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

// The arguments are the JSON-like values the platform built (or a recording restored): strings, bools,
// numbers, nil, map[string]any and []any. They are decoded field by field, strictly: a key without a field of
// the typed record, or a value of another type, is an error, so a field the platform starts to send cannot be
// missed by the checks that read the record. (A JSON round trip would do the same at several times the cost,
// and the checks read contexts on every call they judge.)

func argString(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is a %T, not a string", key, v)
	}
	return s, nil
}

func argBool(key string, v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s is a %T, not a bool", key, v)
	}
	return b, nil
}

func argNumber(key string, v any) (float64, error) {
	switch n := v.(type) {
	case float64:
		return n, nil
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	}
	return 0, fmt.Errorf("%s is a %T, not a number", key, v)
}

func argMap(key string, v any) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		return nil, fmt.Errorf("%s is a %T, not a mapping", key, v)
	}
	return m, nil
}

// argFields decodes the keys of a mapping through set, in key order (so the first error is always the same).
func argFields(key string, v any, set func(k string, v any) error) error {
	m, err := argMap(key, v)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := set(k, m[k]); err != nil {
			return err
		}
	}
	return nil
}

func decodeSandboxArg(key string, v any) (*SandboxArg, error) {
	if v == nil {
		return nil, nil
	}
	var sb SandboxArg
	err := argFields(key, v, func(k string, v any) (err error) {
		switch k {
		case "sandbox_id":
			sb.SandboxID, err = argString(key+"."+k, v)
		case "home":
			sb.Home, err = argString(key+"."+k, v)
		case "workspace":
			sb.Workspace, err = argString(key+"."+k, v)
		default:
			err = fmt.Errorf("%s has the key %q, which SandboxArg has no field for", key, k)
		}
		return err
	})
	return &sb, err
}

func decodeOperationArg(key string, v any) (*OperationArg, error) {
	if v == nil {
		return nil, nil
	}
	var op OperationArg
	err := argFields(key, v, func(k string, v any) (err error) {
		switch k {
		case "agent_id":
			op.AgentID, err = argString(key+"."+k, v)
		case "operation_id":
			op.OperationID, err = argString(key+"."+k, v)
		case "deadline":
			op.Deadline, err = argNumber(key+"."+k, v)
		default:
			err = fmt.Errorf("%s has the key %q, which OperationArg has no field for", key, k)
		}
		return err
	})
	return &op, err
}

func decodeWorkloadIdentity(key string, v any) (*WorkloadIdentity, error) {
	if v == nil {
		return nil, nil
	}
	var wi WorkloadIdentity
	err := argFields(key, v, func(k string, v any) (err error) {
		switch k {
		case "subject":
			wi.Subject, err = argString(key+"."+k, v)
		case "token":
			wi.Token, err = argString(key+"."+k, v)
		default:
			err = fmt.Errorf("%s has the key %q, which WorkloadIdentity has no field for", key, k)
		}
		return err
	})
	return &wi, err
}

// setContextField decodes one key of a context argument into c.
func (c *ContextArg) setContextField(k string, v any) (err error) {
	key := "context." + k
	switch k {
	case "session_id":
		c.SessionID, err = argString(key, v)
	case "agent_id":
		c.AgentID, err = argString(key, v)
	case "principal_id":
		c.PrincipalID, err = argString(key, v)
	case "owner_id":
		c.OwnerID, err = argString(key, v)
	case "sandbox_id":
		c.SandboxID, err = argString(key, v)
	case "sandbox_handle":
		c.SandboxHandle, err = decodeSandboxArg(key, v)
	case "sandbox":
		c.Sandbox, err = decodeSandboxArg(key, v)
	case "trigger":
		c.Trigger, err = argString(key, v)
	case "file_paths_dir":
		c.FilePathsDir, err = argString(key, v)
	case "dispatch_attempt_id":
		c.DispatchAttemptID, err = argString(key, v)
	case "refresh":
		c.Refresh, err = argBool(key, v)
	case "deadline":
		c.Deadline, err = argNumber(key, v)
	case "runtime_generation":
		c.RuntimeGeneration, err = argString(key, v)
	case "workload_identity":
		c.WorkloadIdentity, err = decodeWorkloadIdentity(key, v)
	case "config":
		c.Config, err = argMap(key, v)
	case "operation":
		c.Operation, err = decodeOperationArg(key, v)
	case "creator_user_id":
		c.CreatorUserID, err = argString(key, v)
	case "config_version":
		var n float64
		n, err = argNumber(key, v)
		c.ConfigVersion = int(n)
	case "preparation_id":
		c.PreparationID, err = argString(key, v)
	case "packages":
		if v != nil {
			l, ok := v.([]any)
			if !ok {
				return fmt.Errorf("%s is a %T, not a list", key, v)
			}
			c.Packages = l
		}
	case "skills_path":
		if v != nil {
			var s string
			s, err = argString(key, v)
			c.SkillsPath = &s
		}
	default:
		err = fmt.Errorf("context has the key %q, which ContextArg has no field for", k)
	}
	return err
}

// DecodeContext decodes a callback's context argument (args["context"]; zero when it has none).
func DecodeContext(args map[string]any) (ContextArg, error) {
	var out ContextArg
	v, ok := args["context"]
	if !ok || v == nil {
		return out, nil
	}
	if err := argFields("context", v, out.setContextField); err != nil {
		return ContextArg{}, fmt.Errorf("decode the context argument: %w", err)
	}
	return out, nil
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
		op, err := decodeOperationArg("operation", c.Args["operation"])
		if err != nil {
			return nil, fmt.Errorf("%s (call %s): decode the operation argument: %w", c.Method, c.Key, err)
		}
		return op, nil
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
