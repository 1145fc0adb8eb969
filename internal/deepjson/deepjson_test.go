package deepjson

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Name string
	body []byte
}

type key struct{ A, B int }

type graph struct {
	Public  string
	hidden  string
	Skipped string `json:"-"`
	Big     int64
	Neg     int32
	U       uint64
	F       float64
	Nan     float64
	Binary  string
	Empty   []string
	Nil     []string
	Shared1 *inner
	Shared2 *inner
	Self    *graph
	Any     map[string]any
	ByKey   map[key]string
	When    time.Time
	Dur     time.Duration
	Arr     [2]int
	list    []*inner
}

func sample() *graph {
	in := &inner{Name: "shared", body: []byte("raw body\x00\xff")}
	g := &graph{Public: "p", hidden: "h", Skipped: "s", Big: math.MaxInt64, Neg: -7, U: math.MaxUint64, F: 0.1,
		Nan: math.NaN(), Binary: "\xff\xfeok", Empty: []string{}, Shared1: in, Shared2: in,
		Any:   map[string]any{"n": int64(1) << 60, "f": 1.5, "l": []any{"x", true, nil}, "m": map[string]any{"k": "v"}},
		ByKey: map[key]string{{2, 1}: "b", {1, 2}: "a"}, When: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Dur: 3 * time.Second, Arr: [2]int{4, 5}, list: []*inner{in, {Name: "other"}}}
	g.Self = g
	return g
}

func TestRoundTripKeepsEverything(t *testing.T) {
	c := New()
	g := sample()
	data, err := c.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back *graph
	if err := c.Unmarshal(data, &back); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if back.hidden != "h" || back.Skipped != "s" || string(back.Shared1.body) != "raw body\x00\xff" || back.Binary != "\xff\xfeok" {
		t.Errorf("unexported, json:\"-\" or binary values lost: %+v", back)
	}
	if back.Big != math.MaxInt64 || back.U != math.MaxUint64 || back.Neg != -7 || !math.IsNaN(back.Nan) || back.F != 0.1 {
		t.Errorf("numbers changed: %d %d %d %v %v", back.Big, back.U, back.Neg, back.Nan, back.F)
	}
	if back.Shared1 != back.Shared2 || back.list[0] != back.Shared1 || back.Self != back {
		t.Errorf("shared pointers or the cycle were not kept as one")
	}
	if back.Empty == nil || len(back.Empty) != 0 || back.Nil != nil {
		t.Errorf("empty and nil slices were confused: %#v %#v", back.Empty, back.Nil)
	}
	if back.Any["n"] != int64(1)<<60 || back.ByKey[key{1, 2}] != "a" || !back.When.Equal(g.When) || back.Dur != g.Dur || back.Arr != g.Arr {
		t.Errorf("interfaces, struct-keyed maps or times changed: %#v", back)
	}
	again, err := c.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Errorf("encoding is not a fixpoint:\n%s\n%s", data, again)
	}
}

func TestDeterministic(t *testing.T) {
	c := New()
	first, _ := c.Marshal(sample())
	for range 20 {
		if got, _ := c.Marshal(sample()); !bytes.Equal(first, got) {
			t.Fatalf("two encodings of the same graph differ:\n%s\n%s", first, got)
		}
	}
}

func TestUnknownKindsFailClosed(t *testing.T) {
	c := New()
	type withFunc struct{ F func() }
	if _, err := c.Marshal(withFunc{F: func() {}}); err == nil || !strings.Contains(err.Error(), "$.F") {
		t.Errorf("a func field was not refused with its path: %v", err)
	}
	type withAny struct{ V any }
	if _, err := c.Marshal(withAny{V: struct{ X int }{1}}); err == nil || !strings.Contains(err.Error(), "does not know") {
		t.Errorf("an unknown interface type was not refused: %v", err)
	}
	var v withAny
	if err := c.Unmarshal([]byte(`{"V":{"T":"os.File","v":{}}}`), &v); err == nil {
		t.Errorf("an unknown interface type was read")
	}
	var g graph
	if err := c.Unmarshal([]byte(`{"Nope":1}`), &g); err == nil || !strings.Contains(err.Error(), "record it again") {
		t.Errorf("an unknown field was not refused: %v", err)
	}
}

func TestCustomAndRewrite(t *testing.T) {
	type cache struct{ m map[string]string }
	type holder struct {
		Path  string
		Raw   []byte
		Cache cache
	}
	c := New()
	c.Customize(reflect.TypeFor[cache](), Custom{})
	c.Rewrite = func(s string) string { return strings.ReplaceAll(s, "/home/me/repo", "/repo") }
	data, err := c.Marshal(holder{Path: "/home/me/repo/x", Raw: []byte("at /home/me/repo/y"), Cache: cache{m: map[string]string{"a": "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "home") {
		t.Errorf("a path was not rewritten: %s", data)
	}
	var back holder
	if err := c.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.Path != "/repo/x" || string(back.Raw) != "at /repo/y" || back.Cache.m != nil {
		t.Errorf("got %+v", back)
	}
}

func FuzzUnmarshal(f *testing.F) {
	data, _ := New().Marshal(sample())
	f.Add(data)
	f.Add([]byte(`{"Shared1":{"*":3}}`))
	f.Add([]byte(`{"Any":{"x":{"T":"string","v":{"b64":"!!"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var g *graph
		if err := New().Unmarshal(data, &g); err != nil {
			return
		}
		if _, err := New().Marshal(g); err != nil {
			t.Fatalf("a graph read back cannot be written: %v", err)
		}
	})
}

func TestEqualAfterRoundTrip(t *testing.T) {
	c := New()
	type plain struct {
		A map[string][]int
		b *string
	}
	s := "x"
	in := plain{A: map[string][]int{"k": {1, 2}}, b: &s}
	data, _ := c.Marshal(in)
	var out plain
	if err := c.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("got %#v", out)
	}
}
