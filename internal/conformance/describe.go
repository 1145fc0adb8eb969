package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/astrabox-dev/astrabox/internal/discovery"
	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// Description is what `astrabox providers` shows for one declaration.
type Description struct {
	Name       string            `json:"name"`
	Value      string            `json:"target"`
	Source     string            `json:"source"`
	Loaded     bool              `json:"loaded"`
	LoadError  string            `json:"load_error,omitempty"`
	IsSubclass bool              `json:"is_subclass"`
	Provider   string            `json:"provider_name,omitempty"`
	NameError  string            `json:"name_error,omitempty"`
	File       string            `json:"file,omitempty"`
	Line       int               `json:"line,omitempty"`
	Methods    []MethodSummary   `json:"methods"`
	Plan       *PlanSummary      `json:"plan,omitempty"`
	PlanError  string            `json:"plan_error,omitempty"`
	Extra      map[string]string `json:"-"`
}

// MethodSummary says whether a callback is overridden and how.
type MethodSummary struct {
	Name       string `json:"name"`
	Overridden bool   `json:"overridden"`
	Async      bool   `json:"async"`
	File       string `json:"file,omitempty"`
	Line       int    `json:"line,omitempty"`
}

// PlanSummary is the plan for the default configuration.
type PlanSummary struct {
	SessionBound bool            `json:"session_bound"`
	Declaration  json.RawMessage `json:"declaration"`
}

// Describe loads one declaration in a fresh harness and reports what it is, and its plan for the default
// configuration (secrets masked).
func Describe(ctx context.Context, t *Target, d discovery.Declaration) *Description {
	out := &Description{Name: d.Name, Value: d.Value, Source: d.Where(), Methods: []MethodSummary{}}
	proc, err := harness.Start(ctx, harness.Options{Python: t.Python.Path, ProjectDir: t.Project.Dir, Replica: "describe", Limits: t.Settings.limits()})
	if err != nil {
		out.LoadError = err.Error()
		return out
	}
	defer proc.Close()
	reply, err := proc.Load(ctx, harness.LoadArgs{Target: d.Ref.Target(), Paths: t.Paths, ProjectRoot: t.Project.Dir})
	if err != nil {
		out.LoadError = err.Error()
		return out
	}
	if !reply.OK {
		if reply.Error != nil {
			out.LoadError = reply.Error.Type + ": " + reply.Error.Message
		}
		return out
	}
	info, err := reply.LoadInfo()
	if err != nil {
		out.LoadError = err.Error()
		return out
	}
	out.Loaded = true
	out.IsSubclass = info.IsSubclass
	out.File, out.Line = info.File, info.Line
	if info.Name != nil {
		out.Provider = *info.Name
	}
	if info.NameError != nil {
		out.NameError = *info.NameError
	}
	names := make([]string, 0, len(info.Methods))
	for n := range info.Methods {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return callbackRank(names[i]) < callbackRank(names[j]) })
	for _, n := range names {
		m := info.Methods[n]
		out.Methods = append(out.Methods, MethodSummary{Name: n, Overridden: m.Overridden, Async: m.Async, File: m.File, Line: m.Line})
	}
	if !info.IsSubclass || !info.Instantiated {
		return out
	}
	cfg := DefaultConfig(1)
	planted, _ := plantCanaries(cfg, t.Settings.SecretFields, NewCanary)
	var set secrets.Set
	for _, p := range planted {
		set.AddSecret(p)
	}
	rep, err := proc.Call(ctx, string(simulate.CallPlan), map[string]any{"config": cfg}, 10*time.Second)
	switch {
	case err != nil:
		out.PlanError = err.Error()
	case !rep.OK:
		if rep.Error != nil {
			out.PlanError = rep.Error.Type + ": " + rep.Error.Message
		}
	default:
		res, err := rep.Result()
		if err != nil {
			out.PlanError = err.Error()
		} else if !simulate.KindPlan.Of(res) {
			out.PlanError = fmt.Sprintf("plan returned %s, not a RuntimePreparationPlan", res.Type)
		} else {
			out.Plan = &PlanSummary{SessionBound: res.SessionBound, Declaration: json.RawMessage(res.Declaration)}
		}
	}
	// The plan was made with canaries in its configuration: mask the whole description in one pass.
	masked, err := secrets.Masked(&set, out)
	if err != nil {
		out.Plan, out.PlanError = nil, err.Error()
		return out
	}
	return masked
}

// callbackRank orders callbacks as the contract presents them; unknown names sort last.
func callbackRank(name string) int {
	if i := slices.Index(simulate.Callbacks(), simulate.Callback(name)); i >= 0 {
		return i
	}
	return len(simulate.Callbacks())
}

// ResolveAll discovers the project and every declaration (project and installed) without refusing on
// conflicts, for `astrabox providers`.
func ResolveAll(ctx context.Context, o Options) (*Target, []discovery.Declaration, error) {
	o2 := o
	t, err := Resolve(ctx, o2)
	if err == nil {
		return t, t.Resolution.All, nil
	}
	// On a conflict, still describe every declaration.
	var ce *discovery.ConflictError
	if !errors.As(err, &ce) {
		return nil, nil, err
	}
	first := ce.Declarations[0].Name
	o2.Provider = first
	t, err2 := Resolve(ctx, o2)
	if err2 != nil {
		return nil, nil, err
	}
	t.Warnings = append(t.Warnings, err.Error())
	return t, ce.Declarations, nil
}
