// Package timeline renders a simulated scenario's history as the readable timeline `astrabox simulate`
// prints: each step, each callback with its replica, what was delivered where (material redacted), the
// requests the double and the project's declared services received, and the connections egress control
// refused. Every secret of the run is masked.
package timeline

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/astrabox-dev/astrabox/internal/secrets"
	"github.com/astrabox-dev/astrabox/internal/simulate"
	"github.com/astrabox-dev/astrabox/internal/term"
)

// Write prints h as a timeline on w with the styles s, masking every secret of set. Source locations are shown
// relative to root (the project directory) when they are inside it. What the timeline shows of h is first
// gathered into one view and masked in one pass (secrets.Masked, every string of it); an error means the
// view holds a type the masking walker does not know, and nothing is printed.
func Write(w io.Writer, s term.Styles, h *simulate.History, set *secrets.Set, root string) error {
	v, err := secrets.Masked(set, viewOf(h))
	if err != nil {
		return fmt.Errorf("mask the timeline: %w", err)
	}
	fmt.Fprintf(w, "%s  seed %d, %d replicas, engine %s, provider %s\n", s.Heading.Render("scenario "+v.Scenario), v.Seed, v.Replicas, v.Engine, v.Provider)
	for _, e := range v.Events {
		writeEvent(w, s, e)
	}
	writeRequests(w, s, v.Requests)
	writeEgress(w, s, v.Egress, root)
	fmt.Fprintln(w)
	return nil
}

// view is what the timeline shows of a history: every string in it is the history's, unmasked until Write
// masks the whole view.
type view struct {
	Scenario, Engine, Provider string
	Seed                       int64
	Replicas                   int
	Events                     []event
	Requests                   []request
	Egress                     []egress
}

// request is what the timeline shows of a request the double received.
type request struct {
	Seq                                       int64
	Replica, Method, Path, Call, Service      string
	Status                                    int
	Held, Delayed, Fenced, Dropped, Forbidden bool
}

// event is what the timeline shows of one event.
type event struct {
	At                           float64
	Step                         int
	Kind, Replica, Message, Code string
	Call                         *call
}

// call is what the timeline shows of a callback: its key, whether it returned, its error and the names of
// the material it returned (never the material).
type call struct {
	Key      string
	Returned bool
	Error    string
	Files    []file
	EnvNames []string
}

// file is a delivered file's name and size.
type file struct {
	Name string
	Size int
}

// egress is what the timeline shows of an egress attempt.
type egress struct {
	Replica, Call, Callback, Method string
	// Target is the scheme, host and path the attempt addressed.
	Target  string
	Refused bool
	File    string
	Line    int
}

// viewOf gathers what the timeline shows of h.
func viewOf(h *simulate.History) view {
	v := view{Scenario: h.Scenario, Engine: string(h.Engine), Provider: h.Provider, Seed: h.Seed, Replicas: h.Replicas}
	for _, r := range h.Requests {
		v.Requests = append(v.Requests, request{Seq: r.Seq, Replica: r.Replica, Method: r.Method, Path: r.Path, Call: r.Call,
			Service: r.Service, Status: r.Status, Held: r.Held, Delayed: r.Delayed, Fenced: r.Fenced, Dropped: r.Dropped, Forbidden: r.Forbidden})
	}
	for _, e := range h.Events {
		ev := event{At: e.At, Step: e.Step, Kind: string(e.Kind), Replica: e.Replica, Message: e.Message, Code: e.Code}
		if e.Kind == simulate.EventCall && e.Call != nil {
			c := &call{Key: e.Call.Key, Returned: e.Call.Outcome == simulate.OutcomeReturned}
			if e.Call.Error != nil {
				c.Error = e.Call.Error.Type + ": " + e.Call.Error.Message
			}
			if simulate.KindMaterials.Of(e.Call.Result) {
				for _, fl := range e.Call.Result.Files {
					c.Files = append(c.Files, file{Name: fl.Name, Size: len(fl.Content)})
				}
				c.EnvNames = sortedNames(e.Call.Result.Environment)
			}
			ev.Call = c
		}
		v.Events = append(v.Events, ev)
	}
	for _, a := range h.Egress {
		target := a.Host
		if a.Scheme != "" {
			target = a.Scheme + "://" + a.Host
		}
		v.Egress = append(v.Egress, egress{Replica: a.Replica, Call: a.Call, Callback: a.Callback, Method: a.Method,
			Target: target + a.Path, Refused: a.Refused, File: a.File, Line: a.Line})
	}
	return v
}

// writeEvent prints one event of the history.
func writeEvent(w io.Writer, s term.Styles, e event) {
	at := fmt.Sprintf("t+%6.1fs", e.At)
	rep := e.Replica
	if rep == "" {
		rep = "  "
	}
	msg := e.Message
	switch e.Kind {
	case simulate.EventStep:
		fmt.Fprintf(w, "\n%s %s\n", s.Heading.Render(fmt.Sprintf("%d.", e.Step)), s.Heading.Render(msg))
		return
	case simulate.EventCall:
		if e.Call != nil {
			writeCall(w, s, e, at, rep, msg)
			return
		}
	case simulate.EventOutcome:
		if e.Code != "" {
			msg = s.Fail.Render(e.Code) + " " + msg
		}
	case simulate.EventSandbox, simulate.EventBackground:
		msg = s.Dim.Render(msg)
	}
	fmt.Fprintf(w, "   %s %s %-4s %s\n", s.Dim.Render(at), rep, e.Kind[:min(4, len(e.Kind))], msg)
}

// writeCall prints a callback event with its error and the names of the material it returned.
func writeCall(w io.Writer, s term.Styles, e event, at, rep, msg string) {
	label := s.Pass.Render("call")
	if !e.Call.Returned {
		label = s.Warn.Render("call")
	}
	fmt.Fprintf(w, "   %s %s %-4s %s %s\n", s.Dim.Render(at), rep, label, s.Code.Render(e.Call.Key), msg)
	indent := strings.Repeat(" ", len(at))
	if e.Call.Error != "" {
		fmt.Fprintf(w, "   %s         %s\n", indent, s.Dim.Render(Truncate(e.Call.Error, 120)))
	}
	var names []string
	for _, fl := range e.Call.Files {
		names = append(names, fmt.Sprintf("%s (%d bytes)", fl.Name, fl.Size))
	}
	for _, k := range e.Call.EnvNames {
		names = append(names, k+"=<redacted>")
	}
	if len(names) > 0 {
		fmt.Fprintf(w, "   %s         %s\n", indent, s.Dim.Render("material: "+strings.Join(names, ", ")))
	}
}

// writeRequests prints the requests the double received, for its own endpoints and for the declared
// services it stands in front of; a service's request names the service.
func writeRequests(w io.Writer, s term.Styles, reqs []request) {
	if len(reqs) == 0 {
		return
	}
	var svcs []string
	for _, r := range reqs {
		if r.Service != "" && !contains(svcs, r.Service) {
			svcs = append(svcs, r.Service)
		}
	}
	sort.Strings(svcs)
	if len(svcs) == 0 {
		fmt.Fprintf(w, "\n%s %d request(s) to the deployment double\n", s.Heading.Render("double:"), len(reqs))
	} else {
		fmt.Fprintf(w, "\n%s %d request(s) to the deployment double and the declared services (%s)\n", s.Heading.Render("requests:"), len(reqs), strings.Join(svcs, ", "))
	}
	for _, r := range reqs {
		call := r.Call
		if call == "" {
			call = "background"
		}
		via := ""
		if r.Service != "" {
			via = " " + s.Dim.Render("via "+r.Service)
		}
		fmt.Fprintf(w, "   #%-3d %-3s %-6s %s %s -> %d%s%s\n", r.Seq, r.Replica, r.Method, r.Path, s.Dim.Render("("+call+")"), r.Status, flags(r), via)
	}
}

// writeEgress prints the connections replicas made to destinations that are not declared services.
func writeEgress(w io.Writer, s term.Styles, attempts []egress, root string) {
	if len(attempts) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s %d connection(s) to destinations that are not declared services\n", s.Heading.Render("egress:"), len(attempts))
	for _, a := range attempts {
		by := "no callback in flight"
		if a.Call != "" {
			by = a.Call + " " + a.Callback
		}
		verdict := s.Fail.Render("refused")
		if !a.Refused {
			verdict = s.Warn.Render("let through (egress = \"allow\")")
		}
		line := strings.TrimSpace(a.Method + " " + a.Target)
		fmt.Fprintf(w, "   %-3s %s %s %s%s\n", a.Replica, line, s.Dim.Render("("+by+")"), verdict, connectedAt(s, a, root))
	}
}

// connectedAt is " at FILE:LINE" of the provider's line that opened the connection, when the harness knew it.
func connectedAt(s term.Styles, a egress, root string) string {
	if a.File == "" || a.Line <= 0 {
		return ""
	}
	file := a.File
	if root != "" {
		if rel, err := filepath.Rel(root, file); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			file = rel
		}
	}
	return " " + s.Dim.Render(fmt.Sprintf("at %s:%d", file, a.Line))
}

func flags(r request) string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{r.Held, "held"}, {r.Delayed, "delayed"}, {r.Fenced, "fenced"}, {r.Dropped, "dropped"}, {r.Forbidden, "FORBIDDEN"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " [" + strings.Join(out, ", ") + "]"
}

// Truncate cuts s to at most n bytes, at a character boundary, marking the cut. Mask before truncating: a
// secret cut in two is no longer found.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
