package harness

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// goWireTypes are the Go types of docs/protocol.md's observations and reply values that the harness's
// Python records (python/astrabox/_harness/records.py) mirror, by Go name.
var goWireTypes = map[string]any{
	"Observations": Observations{}, "LogRecord": LogRecord{}, "WarningRecord": WarningRecord{}, "AuditEvent": AuditEvent{},
	"Connection": Connection{}, "Send": Send{}, "TLSFailure": TLSFailure{}, "NativeClient": NativeClient{},
	"Leftovers": Leftovers{}, "LeftoverThread": LeftoverThread{}, "LeftoverTask": LeftoverTask{},
	"LeftoverTimer": LeftoverTimer{}, "LeftoverChild": LeftoverChild{},
	"Result": Result{}, "MaterialFile": MaterialFile{}, "ActionCommand": ActionCommand{}, "TypeError": TypeError{},
}

// notMirrored are wire types reachable from Observations or Result that have no Python record, with why.
var notMirrored = map[string]string{
	"Issuer": "units.py writes the issuing unit as the same {kind, unit, after_end} it sends in the X-Astrabox-Work header, which ParseIssuer reads",
}

// pyRecord is one dataclass of records.py: the Go type it names and its wire fields.
type pyRecord struct {
	class, goName string
	fields        []string
}

var (
	pyClassRe = regexp.MustCompile(`(?m)^@dataclass\nclass (\w+)[^\n]*:\n((?:    [^\n]*\n|\n)*)`)
	pyGoRe    = regexp.MustCompile("\\(Go: ``(\\w+)``")
	pyFieldRe = regexp.MustCompile(`(?m)^    (\w+): [^\n=]+(?:= ?([^\n]*))?$`)
	pyKindRe  = regexp.MustCompile(`(?m)^KIND_\w+ = "([^"]+)"$`)
)

// pyRecords parses the dataclasses of records.py that name a Go type.
func pyRecords(t *testing.T) ([]pyRecord, []string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("python", "astrabox", "_harness", "records.py"))
	if err != nil {
		t.Fatal(err)
	}
	var out []pyRecord
	for _, m := range pyClassRe.FindAllStringSubmatch(string(src), -1) {
		body := m[2]
		g := pyGoRe.FindStringSubmatch(body)
		if g == nil {
			continue
		}
		r := pyRecord{class: m[1], goName: g[1]}
		// Fields end at the first method.
		if i := strings.Index(body, "\n    def "); i >= 0 {
			body = body[:i]
		}
		for _, f := range pyFieldRe.FindAllStringSubmatch(body, -1) {
			if strings.Contains(f[2], "compare=False") {
				continue // harness state, never on the wire
			}
			r.fields = append(r.fields, f[1])
		}
		out = append(out, r)
	}
	var kinds []string
	for _, m := range pyKindRe.FindAllStringSubmatch(string(src), -1) {
		kinds = append(kinds, m[1])
	}
	return out, kinds
}

// jsonKeys are the JSON keys of a Go struct's fields.
func jsonKeys(v any) []string {
	var out []string
	typ := reflect.TypeOf(v)
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// wireStructs collects the harness struct types reachable from t.
func wireStructs(t reflect.Type, seen map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeOf(Result{}).PkgPath() || seen[t.Name()] {
		return
	}
	seen[t.Name()] = true
	for i := 0; i < t.NumField(); i++ {
		wireStructs(t.Field(i).Type, seen)
	}
}

// TestPythonRecordsMirrorGo holds the harness's Python records to messages.go under -short, without
// Python: every Go type of an observation or a reply value has a record naming it, and each record's wire
// fields are exactly its Go type's JSON keys. A field added on one side only fails here.
func TestPythonRecordsMirrorGo(t *testing.T) {
	recs, kinds := pyRecords(t)
	byGo := map[string]pyRecord{}
	for _, r := range recs {
		if _, ok := goWireTypes[r.goName]; !ok {
			t.Errorf("records.py: %s names Go type %s, which goWireTypes does not list", r.class, r.goName)
			continue
		}
		byGo[r.goName] = r
	}
	reach := map[string]bool{}
	wireStructs(reflect.TypeOf(Observations{}), reach)
	wireStructs(reflect.TypeOf(Result{}), reach)
	for name := range reach {
		if _, ok := goWireTypes[name]; !ok && notMirrored[name] == "" {
			t.Errorf("messages.go: %s is on the wire (reachable from Observations or Result) but has no Python record; add one to records.py and to goWireTypes", name)
		}
	}
	for name, v := range goWireTypes {
		r, ok := byGo[name]
		if !ok {
			t.Errorf("records.py: no dataclass says (Go: ``%s``)", name)
			continue
		}
		want, got := jsonKeys(v), slices.Clone(r.fields)
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			t.Errorf("records.py %s has fields %v; Go %s has JSON keys %v", r.class, got, name, want)
		}
	}
	var goKinds []string
	for _, k := range ResultKinds() {
		goKinds = append(goKinds, string(k))
	}
	if !slices.Equal(kinds, goKinds) {
		t.Errorf("records.py KIND_* constants %v, Go ResultKinds %v (same order)", kinds, goKinds)
	}
}
