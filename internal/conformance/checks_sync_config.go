package conformance

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/astrabox-dev/astrabox/internal/harness"
	"github.com/astrabox-dev/astrabox/internal/report"
	"github.com/astrabox-dev/astrabox/internal/simulate"
)

// This file holds the decision of SYNC-NO-LOG-CONFIG (registered in checks_sync.go): where trusted
// configuration was written out.

// configPath finds where in the configuration a string value sits ("agent.instructions").
func configPath(v any, want, prefix string) string {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if r := configPath(t[k], want, p); r != "" {
				return r
			}
		}
	case []any:
		for i, x := range t {
			if r := configPath(x, want, fmt.Sprintf("%s[%d]", prefix, i)); r != "" {
				return r
			}
		}
	case string:
		if t == want {
			return prefix
		}
	}
	return ""
}

// trustedIn returns the configuration path of the first trusted string in text (raw or JSON-escaped).
func (ev *Evidence) trustedIn(text string) string {
	if text == "" {
		return ""
	}
	for _, s := range ev.TrustedStrings {
		esc, _ := json.Marshal(s)
		if strings.Contains(text, s) || strings.Contains(text, strings.Trim(string(esc), `"`)) {
			if p := configPath(ev.Config, s, ""); p != "" {
				return p
			}
			return "a trusted configuration value"
		}
	}
	return ""
}

// configLeak is one place where trusted configuration was written out.
type configLeak struct {
	field, where string
	loc          *report.Location
	// logger and levelNo are a log record's logger and level (levelNo 0 for other text).
	logger  string
	levelNo int
}

// configLeaks scans observations for trusted configuration.
func (ev *Evidence) configLeaks(obs harness.Observations) []configLeak {
	var out []configLeak
	for _, l := range obs.Logs {
		text := l.Message
		if l.ExcText != nil {
			text += "\n" + *l.ExcText
		}
		if f := ev.trustedIn(text); f != "" {
			out = append(out, configLeak{field: f, where: fmt.Sprintf("a log record (level %s, logger %q)", l.Level, l.Logger), loc: at(l.File, l.Line),
				logger: l.Logger, levelNo: l.LevelNo})
		}
	}
	for _, w := range obs.Warnings {
		if f := ev.trustedIn(w.Message); f != "" {
			out = append(out, configLeak{field: f, where: "a " + w.Category + " warning", loc: at(w.File, w.Line)})
		}
	}
	return out
}

func decideSyncNoLogConfig(ev *Evidence) []Finding {
	if len(ev.TrustedStrings) == 0 {
		return nil
	}
	var out []Finding
	seen := map[string]bool{}
	add := func(cs callSite, l configLeak) {
		tag := l.field + l.where
		if l.loc != nil {
			tag += fmt.Sprintf("%s:%d", l.loc.Path, l.loc.Line)
		}
		if seen[tag] {
			return
		}
		seen[tag] = true
		if l.loc == nil {
			l.loc = ev.methodLocation(cs.c.Method)
		}
		msg := fmt.Sprintf("%s wrote the trusted configuration field %s to %s", cs.c.Method, l.field, l.where)
		below := ev.belowLogLevel(l.levelNo)
		if below {
			msg += belowLevelNote(l.logger, ev.LogLevel)
		}
		out = append(out, Finding{Warning: below, Message: msg, Location: l.loc, Evidence: []report.Evidence{ev.evidence(cs, msg, l.loc)}})
	}
	for _, cs := range ev.calls() {
		for _, l := range ev.configLeaks(ev.allObservations(cs)) {
			add(cs, l)
		}
		if f := ev.trustedIn(cs.c.Stdout); f != "" {
			add(cs, configLeak{field: f, where: "standard output"})
		}
		if f := ev.trustedIn(cs.c.Stderr); f != "" {
			add(cs, configLeak{field: f, where: "standard error"})
		}
	}
	// Observations reported after the last callback belong to no call; attribute them to the replica's last
	// call.
	for _, h := range ev.Histories {
		var last map[string]callSite = map[string]callSite{}
		for _, e := range h.Events {
			if e.Call != nil {
				last[e.Call.Replica] = callSite{h: h, c: e.Call, e: e}
				continue
			}
			if e.Kind != simulate.EventBackground || e.Background == nil {
				continue
			}
			if cs, ok := last[e.Replica]; ok {
				for _, l := range ev.configLeaks(*e.Background) {
					add(cs, l)
				}
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------------
// SYNC-QUIESCENT
