package conformance

import (
	"fmt"
	"path"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// This file holds the two checks about what a provider leaves inside a box before any Session claims it
// (LEAK-INVENTORY, IMAGE-NO-RETROFIT).

// judgesBox lists the callbacks that run with a box, which the box checks judge.
var judgesBox = []simulate.Callback{simulate.CallSynchronize, simulate.CallPrepareSession, simulate.CallPrepareTurn}

func init() {
	register(
		&Check{
			ID: "LEAK-INVENTORY", Title: "No secret in unclaimed inventory", Area: AreaLeak, Severity: report.SeverityError,
			Clauses: []string{"LEAK-INVENTORY"},
			Needs:   "unclaimed inventory left by a prewarm", Exercise: exInventory, Judges: judgesBox,
			Rationale: "A prewarmed box waits in inventory before any Session claims it, and may be claimed by any principal or discarded and inspected. Session material, model credentials and environment credentials written there are exposed to whoever gets the box; they must be resolved at claim time, not during synchronize.",
			Hint:      "Write no credential into the sandbox during synchronize; return credentials as Session material from prepare_session instead.",
			Wrong:     "await context.sandbox.write_file(home + \"/.config/model-key\", config[\"secrets\"][\"model_api_key\"].encode())",
			Right:     "# synchronize writes nothing secret; prepare_session returns the key as RuntimeMaterials",
			Decide:    decideLeakInventory,
		},
		&Check{
			ID: "IMAGE-NO-RETROFIT", Title: "No wrapper retrofitted into the box", Area: AreaGeneral, Severity: report.SeverityError,
			Clauses: []string{"IMAGE-NO-RETROFIT"},
			Needs:   "a callback that had a sandbox handle", Exercise: exBox, Judges: judgesBox,
			Rationale: "System services and wrappers must be baked into the selected image, where they are reviewed and versioned. A provider that writes an executable into the box, or writes into a directory on the image's PATH, retrofits a wrapper that shadows or replaces the image's own commands and defers its entrypoint.",
			Hint:      "Write only data files (no execute bit) outside the image's PATH; bake wrappers into the image.",
			Wrong:     "await sandbox.write_file(home + \"/bin/claude\", WRAPPER, mode=0o755)",
			Right:     "await sandbox.write_file(home + \"/.config/app/settings.json\", data, mode=0o600)",
			Decide:    decideImageNoRetrofit,
		},
	)
}

// unclaimed tells whether an inventory box was never handed to a Session.
func unclaimed(state string) bool {
	switch state {
	case "waiting", "discarded", "invalidated", "unresolved", "preparing":
		return true
	}
	return false
}

// exInventory needs unclaimed inventory a provider call prepared.
func exInventory(ev *Evidence) Exercise {
	t := newTally(callNoun(simulate.CallSynchronize))
	met := 0
	for _, h := range ev.Histories {
		for _, b := range h.Inventory {
			if unclaimed(b.State) {
				met++
			}
		}
		for _, cs := range ev.callsIn(h, simulate.CallSynchronize) {
			t.add(cs)
		}
	}
	t.count("unclaimed boxes", met)
	return need{reach: "a prewarm step that leaves boxes waiting reaches it"}.result(t, met)
}

func decideLeakInventory(ev *Evidence) []Finding {
	var out []Finding
	for _, h := range ev.Histories {
		boxes := map[string]simulate.InventoryBox{}
		for _, b := range h.Inventory {
			if unclaimed(b.State) {
				boxes[b.SandboxID] = b
			}
		}
		if len(boxes) == 0 {
			continue
		}
		// The last successful provider write of each path of each unclaimed box.
		type fileKey struct{ sandbox, path string }
		last := map[fileKey]*simulate.SandboxOp{}
		var order []fileKey
		for _, e := range h.Events {
			op := e.Sandbox
			if e.Kind != simulate.EventSandbox || op == nil || op.Error != "" {
				continue
			}
			if _, ok := boxes[op.SandboxID]; !ok {
				continue
			}
			k := fileKey{op.SandboxID, path.Clean(op.Path)}
			switch op.Op {
			case harness.OpWriteFile:
				if _, ok := last[k]; !ok {
					order = append(order, k)
				}
				last[k] = op
			case harness.OpRemove:
				last[k] = nil
			}
		}
		for _, k := range order {
			op := last[k]
			if op == nil {
				continue
			}
			b := boxes[k.sandbox]
			if !contains(b.Files, k.path) {
				continue
			}
			m := ev.Secrets.Find(op.Content())
			if len(m) == 0 {
				continue
			}
			cs, ok := callOf(h, op.Call)
			var loc *report.Location
			if ok {
				loc = ev.methodLocation(cs.c.Method)
			}
			msg := fmt.Sprintf("box %s (%s, never claimed) holds %s, written by the provider, containing %s (%s)", b.ID, b.State, k.path, m[0].Origin, m[0].Encoding)
			f := Finding{Message: msg, Location: loc}
			if ok {
				f.Evidence = []report.Evidence{ev.evidence(cs, msg, loc)}
			}
			out = append(out, f)
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------------
// IMAGE-NO-RETROFIT

// imageReadOnlyDirs are the image's read-only directories in the fake sandbox.
var imageReadOnlyDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/etc", "/opt"}

// imageDir returns the image directory (PATH or read-only) a path lies in, or "".
func imageDir(p string) string {
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	cp := path.Clean(p)
	for _, d := range simulate.ImagePath {
		if path.Dir(cp) == d || cp == d {
			return d + " (on the image's PATH)"
		}
	}
	for _, d := range imageReadOnlyDirs {
		if cp == d || strings.HasPrefix(cp, d+"/") {
			return d + " (read-only image directory)"
		}
	}
	return ""
}

// exBox needs a call that had a sandbox handle (synchronize, prepare_session, prepare_turn).
var exBox = needCalls(need{calls: judgesBox, label: "with a sandbox",
	met: func(_ *Evidence, cs callSite) bool {
		return cs.c.Ctx.SandboxID != "" || cs.c.Outcome == simulate.OutcomeReturned
	},
	reach: "prewarm, claim and turn steps reach it"})

func decideImageNoRetrofit(ev *Evidence) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, h := range ev.Histories {
		for _, e := range h.Events {
			op := e.Sandbox
			if e.Kind != simulate.EventSandbox || op == nil {
				continue
			}
			if op.Op != harness.OpWriteFile && op.Op != harness.OpRemove {
				continue
			}
			var why string
			if op.Op == harness.OpWriteFile && op.Mode&0o111 != 0 && op.Error == "" {
				why = fmt.Sprintf("wrote an executable file %s (mode %#o)", op.Path, op.Mode)
			}
			if d := imageDir(op.Path); d != "" {
				verb := "wrote"
				if op.Op == harness.OpRemove {
					verb = "removed"
				}
				w := fmt.Sprintf("%s %s in %s", verb, op.Path, d)
				if op.Error != "" {
					w += " (refused with " + op.Error + ")"
				}
				if why != "" {
					why += "; " + w
				} else {
					why = w
				}
			}
			if why == "" {
				continue
			}
			cs, ok := callOf(h, op.Call)
			method := "the provider"
			var loc *report.Location
			if ok {
				method = string(cs.c.Method)
				loc = ev.methodLocation(cs.c.Method)
			}
			tag := method + "|" + op.Path
			if seen[tag] {
				continue
			}
			seen[tag] = true
			msg := method + " " + why + " through the sandbox handle"
			f := Finding{Message: msg, Location: loc}
			if ok {
				f.Evidence = []report.Evidence{ev.evidence(cs, msg, loc)}
			}
			out = append(out, f)
		}
	}
	return out
}
