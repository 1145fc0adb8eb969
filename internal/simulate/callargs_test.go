package simulate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryContextDecodes plays every callback without a provider (no Python) and holds each recorded
// argument to its typed record: the platform's checkArgs would panic on a key without a field, and here
// each callback's record carries what the checks read of it.
func TestEveryContextDecodes(t *testing.T) {
	sc, err := ParseScenario("defaults.yaml", []byte(defaultsYAML))
	if err != nil {
		t.Fatal(err)
	}
	h, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Callback]bool{}
	for _, c := range h.Calls() {
		seen[c.Method] = true
		ctx, err := c.Context()
		if err != nil {
			t.Fatalf("%s: %v", c.Key, err)
		}
		op, err := c.Operation()
		if err != nil {
			t.Fatalf("%s: %v", c.Key, err)
		}
		switch c.Method {
		case CallPrepareSession:
			if ctx.SessionID != c.Ctx.Session || ctx.WorkloadIdentity == nil || ctx.WorkloadIdentity.Token == "" || ctx.FilePathsDir == "" {
				t.Errorf("%s: context %+v lacks its Session, workload identity or file_paths_dir", c.Key, ctx)
			}
			found := false
			for _, s := range h.Secrets {
				found = found || s.Value == ctx.WorkloadIdentity.Token
			}
			if !found {
				t.Errorf("%s: the workload identity token is not among the history's secrets", c.Key)
			}
		case CallPrepareTurn:
			if ctx.DispatchAttemptID != c.Ctx.Attempt || ctx.SandboxHandle == nil || ctx.SandboxHandle.SandboxID != c.Ctx.SandboxID {
				t.Errorf("%s: context %+v does not carry attempt %s and sandbox %s", c.Key, ctx, c.Ctx.Attempt, c.Ctx.SandboxID)
			}
		case CallSynchronize, CallRecover:
			if op == nil || op.OperationID == "" || op.AgentID != c.Ctx.Agent {
				t.Errorf("%s: operation %+v, want one of agent %s", c.Key, op, c.Ctx.Agent)
			}
		case CallReadUserActions, CallPerformUserAction:
			if ctx.SessionID != c.Ctx.Session || ctx.OwnerID != c.Ctx.Principal {
				t.Errorf("%s: context %+v, want session %s owned by %s", c.Key, ctx, c.Ctx.Session, c.Ctx.Principal)
			}
		}
	}
	for _, cb := range []Callback{CallPlan, CallSynchronize, CallPrepareSession, CallPrepareTurn, CallReadUserActions, CallRecover} {
		if !seen[cb] {
			t.Errorf("the scenario made no %s call", cb)
		}
	}
	bad := CallRecord{Key: "r1#9", Method: CallPrepareTurn, Args: map[string]any{"context": map[string]any{"session_id": "s1", "surprise": 1}}}
	if _, err := bad.Context(); err == nil || !strings.Contains(err.Error(), "prepare_turn (call r1#9)") || !strings.Contains(err.Error(), "surprise") {
		t.Errorf("a context key without a field: error %v, want one naming the call and the key", err)
	}
}

// untypedContext matches a read of a call's context argument as an untyped map.
var untypedContext = regexp.MustCompile(`Args\["(context|operation)"\]`)

// TestContextIsReadTyped: outside this package's argument builders, no code (tests included) reads a
// call's context or operation argument as a map; CallRecord.Context and Operation are the one decoder.
func TestContextIsReadTyped(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "callargs_test.go") || path == filepath.Join("..", "simulate", "callargs.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := untypedContext.FindString(line); m != "" {
				t.Errorf("%s:%d: reads %s as a map; use CallRecord.Context or CallRecord.Operation", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeContext: any JSON-like arguments decode to a record or an error naming the key, never a panic.
func FuzzDecodeContext(f *testing.F) {
	f.Add([]byte(`{"context":{"session_id":"s1","workload_identity":{"subject":"w","token":"t"},"refresh":true,"deadline":0}}`))
	f.Add([]byte(`{"context":{"operation":{"agent_id":"a","operation_id":"o","deadline":1.5},"config_version":3,"packages":[],"skills_path":null}}`))
	f.Add([]byte(`{"context":{"sandbox":{"sandbox_id":7}}}`))
	f.Add([]byte(`{"context":[1]}`))
	f.Add([]byte(`{"operation":{"x":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var args map[string]any
		if json.Unmarshal(data, &args) != nil {
			return
		}
		for _, cb := range []Callback{CallPrepareSession, CallSynchronize, CallRecover} {
			rec := CallRecord{Key: "r1#1", Method: cb, Args: args}
			ctx, err := rec.Context()
			if err != nil && ctx.SessionID != "" {
				t.Fatalf("an error with a partly decoded record: %+v", ctx)
			}
			if err != nil && !strings.Contains(err.Error(), "(call r1#1)") {
				t.Fatalf("error %q does not name the call", err)
			}
			_, _ = rec.Operation()
		}
	})
}
