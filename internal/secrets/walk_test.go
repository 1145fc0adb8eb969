package secrets

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// walkCanary is the secret the walker tests plant.
const walkCanary = "astx_canary_0011223344556677aabbccdd"

func walkSet() *Set {
	s := &Set{}
	s.Add(walkCanary, "configuration field secrets.model_api_key")
	return s
}

type kind string

type leaf struct {
	Text  string
	Lines []string
	count int // unexported plain fields are copied as they are
}

// futureReport stands for a report type that grows a string field nobody told the masking about: every
// string it holds, however deep, must come back masked.
type futureReport struct {
	Name     string
	Kind     kind
	Added    string // the field "added later"
	Leaf     leaf
	LeafPtr  *leaf
	Shared   *leaf
	Leaves   []leaf
	Ptrs     []*leaf
	Array    [2]string
	ByName   map[string]leaf
	Counts   map[kind]int
	Any      any
	Anys     []any
	Raw      []byte
	Doc      json.RawMessage
	When     time.Time
	Took     time.Duration
	Nested   map[string][]map[string]*leaf
	Next     *futureReport
	Nothing  *leaf
	NilSlice []string
}

func TestMaskedMasksEveryStringWithoutNamingIt(t *testing.T) {
	c := walkCanary
	hexed := hex.EncodeToString([]byte(c))
	shared := &leaf{Text: "shared " + c}
	in := futureReport{
		Name: "n " + c, Kind: kind(c), Added: "added later: " + hexed,
		Leaf: leaf{Text: c, Lines: []string{c, "clean"}, count: 3}, LeafPtr: &leaf{Text: c},
		Shared: shared, Leaves: []leaf{{Text: c}}, Ptrs: []*leaf{shared, {Text: c}},
		Array: [2]string{c, "x"}, ByName: map[string]leaf{"k " + c: {Text: c}}, Counts: map[kind]int{kind(c): 1},
		Any: map[string]any{"list": []any{c, 1.5, true, nil}}, Anys: []any{c, leaf{Text: c}, &leaf{Text: c}, kind(c)},
		Raw: []byte("raw " + c), Doc: json.RawMessage(`{"k":"` + c + `"}`), When: time.Unix(5, 0), Took: time.Second,
		Nested: map[string][]map[string]*leaf{c: {{c: {Text: c}}}},
	}
	in.Next = &in // a cycle
	orig, _ := json.Marshal(struct{ A, B any }{in.Leaf, in.Anys})
	out, err := Masked(walkSet(), in)
	if err != nil {
		t.Fatal(err)
	}
	// Every string of the copy, found through its JSON form, holds no form of the canary.
	out.Next = nil
	doc, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if m := walkSet().Find(doc); len(m) > 0 {
		t.Fatalf("masked copy still holds the canary (%s at %d): %s", m[0].Encoding, m[0].Offset, doc)
	}
	for _, want := range []string{out.Name, string(out.Kind), out.Leaf.Text, out.Leaf.Lines[0], out.LeafPtr.Text, out.Leaves[0].Text,
		out.Ptrs[1].Text, out.Array[0], out.Anys[0].(string), out.Anys[1].(leaf).Text, out.Anys[2].(*leaf).Text, string(out.Anys[3].(kind)),
		string(out.Raw), string(out.Doc), out.Nested[Marker("raw")][0][Marker("raw")].Text} {
		if !HasMarker(want) {
			t.Errorf("not masked: %q", want)
		}
	}
	if !strings.Contains(out.Added, Marker("hex")) {
		t.Errorf("a string field no code names was not masked: %q", out.Added)
	}
	if out.Leaf.count != 3 || !out.When.Equal(in.When) || out.Took != time.Second || out.Leaf.Lines[1] != "clean" {
		t.Errorf("plain values changed: %+v", out)
	}
	if out.Shared != out.Ptrs[0] {
		t.Error("two pointers to one value became two values")
	}
	if out.Nothing != nil || out.NilSlice != nil {
		t.Error("nil became non-nil")
	}
	if after, _ := json.Marshal(struct{ A, B any }{in.Leaf, in.Anys}); string(after) != string(orig) || shared.Text != "shared "+c {
		t.Error("Masked changed the value it was given")
	}
}

func TestMaskedFailsClosedOnTypesItDoesNotKnow(t *testing.T) {
	type withFunc struct {
		Text string
		Hook func() string
	}
	type withChan struct{ C chan string }
	type withUnsafe struct{ P unsafe.Pointer }
	type withUintptr struct{ U uintptr }
	type withHidden struct{ hidden string }
	type deep struct{ Items []map[string]*withChan }
	cases := map[string]func() error{
		"func (nil)": func() error { _, err := Masked(walkSet(), withFunc{Text: walkCanary}); return err },
		"func": func() error {
			_, err := Masked(walkSet(), withFunc{Hook: func() string { return walkCanary }})
			return err
		},
		"chan":            func() error { _, err := Masked(walkSet(), withChan{}); return err },
		"unsafe pointer":  func() error { _, err := Masked(walkSet(), withUnsafe{}); return err },
		"uintptr":         func() error { _, err := Masked(walkSet(), withUintptr{}); return err },
		"unexported text": func() error { _, err := Masked(walkSet(), withHidden{hidden: walkCanary}); return err },
		"deep, empty":     func() error { _, err := Masked(walkSet(), deep{}); return err },
		"func in an any":  func() error { _, err := Masked(walkSet(), []any{walkCanary, func() {}}); return err },
		"chan behind any": func() error { _, err := Masked[any](walkSet(), &withChan{}); return err },
		"colliding keys": func() error {
			set := walkSet()
			set.Add("astx_canary_ffeeddccbbaa998877665544", "configuration field secrets.client_secret")
			_, err := Masked(set, map[string]int{walkCanary: 1, "astx_canary_ffeeddccbbaa998877665544": 2})
			return err
		},
		"colliding JSON keys": func() error {
			set := walkSet()
			set.Add("astx_canary_ffeeddccbbaa998877665544", "configuration field secrets.client_secret")
			_, err := Masked[any](set, []any{map[string]any{walkCanary: 1.0, "astx_canary_ffeeddccbbaa998877665544": 2.0}})
			return err
		},
		"func in a JSON-like map": func() error {
			_, err := Masked[any](walkSet(), map[string]any{"a": []any{map[string]any{"f": func() {}}}})
			return err
		},
		"top-level func":   func() error { _, err := Masked(walkSet(), func() {}); return err },
		"unexported ptr":   func() error { _, err := Masked(walkSet(), struct{ p *leaf }{}); return err },
		"map of chan keys": func() error { _, err := Masked(walkSet(), map[chan int]string{}); return err },
	}
	for name, run := range cases {
		err := run()
		var u *UnmaskableError
		if !errors.As(err, &u) {
			t.Errorf("%s: got %v, want an UnmaskableError", name, err)
			continue
		}
		if u.Path == "" || u.Type == "" || strings.Contains(err.Error(), walkCanary) {
			t.Errorf("%s: error %q", name, err)
		}
	}
	_, err := Masked(walkSet(), withFunc{})
	if err == nil || !strings.Contains(err.Error(), "withFunc.Hook") {
		t.Errorf("the error does not name the field: %v", err)
	}
}

func TestMaskErrorKeepsTheChainAndMasksTheText(t *testing.T) {
	base := errors.New("load failed: " + walkCanary)
	err := walkSet().MaskError(errors.Join(base))
	if strings.Contains(err.Error(), walkCanary) || !HasMarker(err.Error()) {
		t.Fatalf("error text %q", err)
	}
	if !errors.Is(err, base) {
		t.Error("the masked error lost its cause")
	}
	if walkSet().MaskError(nil) != nil {
		t.Error("a nil error became non-nil")
	}
}
