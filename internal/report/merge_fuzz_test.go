package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/term"
)

// renderAll renders a report in every format; none may panic, and a report ReadJSON accepted renders.
func renderAll(t *testing.T, r *Report) {
	for _, f := range Formats() {
		rd, err := For(f, term.NewStyles(false), 80)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := rd.Render(&b, r); err != nil {
			t.Fatalf("render %s of a report ReadJSON accepted: %v", f, err)
		}
	}
}

// FuzzMergeRender reads two JSON reports, merges them, and renders the merge in every format. Any input ends
// in an error or in output, never a panic; merging a report with itself keeps its checks.
func FuzzMergeRender(f *testing.F) {
	one := `{"schema":"` + Schema + `","seed":1,"provider":{"name":"p","entry_point":"e","target":"m:C"},"results":[{"check":"LEAK-LOG","title":"t","area":"a","severity":"error","clauses":["LEAK-LOG"],"status":"failed","message":"m\u001b[31m","evidence":[{"text":"x","location":{"path":"/p/a.py","line":3}}],"location":{"path":"a.py","line":3}}],"scenarios":["s1"]}`
	two := strings.Replace(one, `"failed"`, `"passed"`, 1)
	f.Add([]byte(one), []byte(two))
	f.Add([]byte(one), []byte(`{"schema":"other"}`))
	counted := strings.Replace(two, `"scenarios":["s1"]`, `"scenarios":["s2"]`, 1)
	counted = strings.Replace(counted, `"location":{"path":"a.py","line":3}}]`, `"location":{"path":"a.py","line":3},"decided_over":"3 prepare_turn calls in 1 scenario: 1 refreshes","decided_over_counts":{"noun":"prepare_turn calls","calls":3,"scenarios":1,"counts":[{"label":"refreshes","n":1}]}}]`, 1)
	f.Add([]byte(counted), []byte(counted))
	f.Add([]byte(one), []byte(counted))
	f.Add([]byte(`{}`), []byte(`{"results":[{"check":"","status":"bogus"}]}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if len(a)+len(b) > 256<<10 {
			return
		}
		ra, errA := ReadJSON(bytes.NewReader(a))
		rb, errB := ReadJSON(bytes.NewReader(b))
		if errA != nil || errB != nil {
			return
		}
		renderAll(t, ra)
		m, err := Merge(ra, rb)
		if err != nil {
			return
		}
		renderAll(t, m)
		self, err := Merge(ra, ra)
		if err != nil {
			t.Fatalf("a report does not merge with itself: %v", err)
		}
		checks := map[string]bool{}
		for _, r := range ra.Results {
			checks[r.Check] = true
		}
		if len(self.Results) != len(checks) {
			t.Fatalf("merging a report with itself gave %d results for %d checks", len(self.Results), len(checks))
		}
	})
}

// FuzzReportDeep feeds long and deep reports: many results, long evidence lists, long texts and deep JSON
// where the schema has none. Reading, merging and rendering stay within the machine (no crash).
func FuzzReportDeep(f *testing.F) {
	f.Add(uint16(2000), uint16(50), uint16(20000))
	f.Add(uint16(1), uint16(10000), uint16(1))
	f.Fuzz(func(t *testing.T, results, evidence, depth uint16) {
		var b strings.Builder
		fmt.Fprintf(&b, `{"schema":%q,"seed":1,"provider":{"name":"p"},"extra":%s1%s,"results":[`, Schema, strings.Repeat("[", int(depth)%20000), strings.Repeat("]", int(depth)%20000))
		for i := 0; i < int(results)%3000; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"check":"C%d","status":"failed","message":%q,"evidence":[`, i, strings.Repeat("long ", int(depth)%200))
			for j := 0; j < int(evidence)%(1+20000/(1+int(results)%3000)); j++ {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"text":"e","steps":["a","b"],"location":{"path":"x.py","line":1}}`)
			}
			b.WriteString(`]}`)
		}
		b.WriteString(`]}`)
		r, err := ReadJSON(strings.NewReader(b.String()))
		if err != nil {
			return
		}
		m, err := Merge(r, r)
		if err != nil {
			t.Fatalf("merge: %v", err)
		}
		renderAll(t, m)
	})
}
