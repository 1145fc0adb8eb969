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
// relative to root (the project directory) when they are inside it.
func Write(w io.Writer, s term.Styles, h *simulate.History, set *secrets.Set, root string) {
	fmt.Fprintf(w, "%s  seed %d, %d replicas, engine %s, provider %s\n", s.Heading.Render("scenario "+h.Scenario), h.Seed, h.Replicas, h.Engine, h.Provider)
	for _, e := range h.Events {
		writeEvent(w, s, e, set)
	}
	writeRequests(w, s, h.Requests, set)
	writeEgress(w, s, h.Egress, set, root)
	fmt.Fprintln(w)
}

// writeEvent prints one event of the history.
func writeEvent(w io.Writer, s term.Styles, e *simulate.Event, set *secrets.Set) {
	at := fmt.Sprintf("t+%6.1fs", e.At)
	rep := e.Replica
	if rep == "" {
		rep = "  "
	}
	msg := set.Mask(e.Message)
	switch e.Kind {
	case simulate.EventStep:
		fmt.Fprintf(w, "\n%s %s\n", s.Heading.Render(fmt.Sprintf("%d.", e.Step)), s.Heading.Render(msg))
		return
	case simulate.EventCall:
		writeCall(w, s, e, at, rep, msg, set)
		return
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
func writeCall(w io.Writer, s term.Styles, e *simulate.Event, at, rep, msg string, set *secrets.Set) {
	label := s.Pass.Render("call")
	if e.Call.Outcome != simulate.OutcomeReturned {
		label = s.Warn.Render("call")
	}
	fmt.Fprintf(w, "   %s %s %-4s %s %s\n", s.Dim.Render(at), rep, label, s.Code.Render(e.Call.Key), msg)
	indent := strings.Repeat(" ", len(at))
	if e.Call.Error != nil {
		fmt.Fprintf(w, "   %s         %s\n", indent, s.Dim.Render(Truncate(set.Mask(e.Call.Error.Type+": "+e.Call.Error.Message), 120)))
	}
	if simulate.KindMaterials.Of(e.Call.Result) {
		var names []string
		for _, fl := range e.Call.Result.Files {
			names = append(names, fmt.Sprintf("%s (%d bytes)", set.Mask(fl.Name), len(fl.Content)))
		}
		for _, k := range sortedNames(e.Call.Result.Environment) {
			names = append(names, set.Mask(k)+"=<redacted>")
		}
		if len(names) > 0 {
			fmt.Fprintf(w, "   %s         %s\n", indent, s.Dim.Render("material: "+strings.Join(names, ", ")))
		}
	}
}

// writeRequests prints the requests the double received, for its own endpoints and for the declared
// services it stands in front of; a service's request names the service.
func writeRequests(w io.Writer, s term.Styles, reqs []simulate.Request, set *secrets.Set) {
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
		fmt.Fprintf(w, "   #%-3d %-3s %-6s %s %s -> %d%s%s\n", r.Seq, r.Replica, r.Method, set.Mask(r.Path), s.Dim.Render("("+call+")"), r.Status, flags(r), via)
	}
}

// writeEgress prints the connections replicas made to destinations that are not declared services.
func writeEgress(w io.Writer, s term.Styles, attempts []simulate.EgressAttempt, set *secrets.Set, root string) {
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
		target := a.Host
		if a.Scheme != "" {
			target = a.Scheme + "://" + a.Host
		}
		line := strings.TrimSpace(a.Method + " " + set.Mask(target+a.Path))
		fmt.Fprintf(w, "   %-3s %s %s %s%s\n", a.Replica, line, s.Dim.Render("("+by+")"), verdict, connectedAt(s, a, root))
	}
}

// connectedAt is " at FILE:LINE" of the provider's line that opened the connection, when the harness knew it.
func connectedAt(s term.Styles, a simulate.EgressAttempt, root string) string {
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

func flags(r simulate.Request) string {
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
