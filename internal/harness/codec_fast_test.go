package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// strangeStrings are strings that exercise every branch of a JSON string encoder: the escapes, the control
// bytes, the HTML-sensitive bytes, U+2028 and U+2029, invalid UTF-8 (a provider's bytes decoded by nobody,
// a lone surrogate's encoding, a truncated sequence) and characters outside the basic plane.
var strangeStrings = []string{
	"", "plain", `quote " and backslash \`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<script>&amp;</script>",
	"line\u2028para\u2029", "é ü 中文 🚀", "\xff\xfe", "\xed\xa0\x80 lone surrogate", "cut \xe2\x82", "\xc0\xaf",
	"tab\tin\tthe\tmiddle", strings.Repeat("ab\"", 50), "\u00a0\ufeff\ufffd", "/slash/", "\x80",
}

// checkCallEncoding encodes m by the hand-written encoder and by json.Marshal and fails unless they agree
// byte for byte (or both refuse it); it reports whether the hand-written encoder took it itself.
func checkCallEncoding(t *testing.T, m callMsg) bool {
	t.Helper()
	want, wantErr := json.Marshal(m)
	fast, ok := appendCallJSON(nil, m)
	frame, err := encodeFrame(m)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("encodeFrame error %v, json.Marshal error %v, for %#v", err, wantErr, m)
	}
	if err != nil {
		if ok {
			t.Fatalf("the hand-written encoder took a call json.Marshal refuses (%v): %#v", wantErr, m)
		}
		return false
	}
	if ok && !bytes.Equal(fast, want) {
		t.Fatalf("hand-written encoding differs from json.Marshal:\n got %s\nwant %s", clip(fast), clip(want))
	}
	if !bytes.Equal(frame[4:], want) || int(uint32(frame[0])<<24|uint32(frame[1])<<16|uint32(frame[2])<<8|uint32(frame[3])) != len(want) {
		t.Fatalf("encodeFrame differs from json.Marshal:\n got %q\nwant %q", clip(frame), clip(want))
	}
	return ok
}

// clip shortens an encoding for a failure message: the first difference is what matters.
func clip(b []byte) []byte {
	if len(b) > 400 {
		return append(b[:400:400], "..."...)
	}
	return b
}

func TestCallEncoderMatchesEncodingJSON(t *testing.T) {
	floats := []float64{0, 1, -1, 0.1, 1.5, 5, 1e-6, 9.99999e-7, 1e-7, 1e20, 1e21, 1.2345e21, -1e-9, 5e-324,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1), 123456789.125,
		1e-10, 3.0e-100, 1.7976931348623157e308, 1773000000.123456, 2.5e-5, float64(1 << 53)}
	var args []any
	for _, s := range strangeStrings {
		args = append(args, map[string]any{s: s, "list": []any{s, []string{s}}, "m": map[string]string{s: s, "k": s}})
	}
	for _, f := range floats {
		args = append(args, map[string]any{"f": f, "l": []any{f, -f}})
	}
	args = append(args,
		nil, map[string]any{}, map[string]any(nil), []any(nil), []any{}, map[string]string(nil), []string(nil),
		map[string]any{"n": nil, "t": true, "f": false, "i": 42, "i64": int64(math.MinInt64), "u": uint64(math.MaxUint64),
			"i32": int32(-7), "u32": uint32(7), "uint": uint(3)},
		map[string]any{"config": map[string]any{
			"agent":      map[string]any{"display_name": "Sample support agent", "model": "claude-sonnet-4", "instructions": "Trusted instructions 00000001: answer <politely> & well."},
			"deployment": map[string]any{"base_url": "http://127.0.0.1:4567", "audience": "astrabox-tools"},
			"packages":   []any{map[string]any{"name": "tools", "source": "git+https://example.invalid/tools.git", "ref": "v1"}},
			"skills":     []any{"summarize"}, "secrets": map[string]any{"model_api_key": "", "client_secret": ""},
		}},
		map[string]any{"context": map[string]any{"deadline": float64(time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC).UnixNano()) / 1e9}},
	)
	big, bigStrings := map[string]any{}, map[string]string{}
	for i := 0; i < 40; i++ { // more keys than sortedKeys' buffer on the stack holds
		k := strangeStrings[i%len(strangeStrings)] + strconv.Itoa(40-i)
		big[k], bigStrings[k] = i, k
	}
	args = append(args, big, bigStrings, map[string]any{"nested": []any{big, bigStrings}})
	for _, timeout := range []float64{0, 5, 0.05, 1e-9, 3600, 10.000001} {
		for _, method := range []string{"plan", "prepare_turn", "é\x00<"} {
			for _, a := range args {
				if !checkCallEncoding(t, callMsg{Kind: "call", ID: 7, Method: method, Args: a, TimeoutS: timeout}) {
					t.Fatalf("the hand-written encoder left a call of plain values to json.Marshal: %#v", a)
				}
			}
		}
	}
	for _, id := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64} {
		checkCallEncoding(t, callMsg{Kind: "call", ID: id, Method: "plan", Args: map[string]any{}})
		want, _ := json.Marshal(cancelMsg{Kind: "cancel", ID: id})
		if got, _ := encodeFrame(cancelMsg{Kind: "cancel", ID: id}); !bytes.Equal(got[4:], want) {
			t.Fatalf("cancel %s, want %s", got[4:], want)
		}
	}
}

// TestCallEncoderLeavesOtherValuesToEncodingJSON: what the hand-written encoder does not know (structs,
// bytes, other numeric types, raw JSON, a NaN, a cycle, nesting past its bound) goes to json.Marshal, which
// encodes it or refuses it as before.
func TestCallEncoderLeavesOtherValuesToEncodingJSON(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for i := 0; i < maxFastDepth+5; i++ {
		deep = []any{deep}
	}
	for _, a := range []any{
		LoadArgs{Target: "p.m:A", Paths: []string{"/x"}}, settleArgs{Calls: []int64{1}, TimeoutS: 1},
		map[string]any{"b": []byte("hi\xff")}, map[string]any{"f32": float32(0.1)}, map[string]any{"raw": json.RawMessage(`{"a" : 1}`)},
		map[string]any{"n": json.Number("12")}, map[string]any{"nan": math.NaN()}, map[string]any{"inf": math.Inf(-1)},
		map[string]any{"fn": func() {}}, cyclic, deep, map[string]int{"a": 1}, []map[string]any{{"a": 1}},
	} {
		if checkCallEncoding(t, callMsg{Kind: "call", ID: 1, Method: "plan", Args: a}) {
			t.Errorf("the hand-written encoder took %T itself", a)
		}
	}
	if _, err := encodeFrame(callMsg{Kind: "call", ID: 1, Method: "plan", Args: map[string]any{"nan": math.NaN()}}); err == nil {
		t.Error("a NaN argument was encoded")
	} else if _, ok := errors.AsType[*json.UnsupportedValueError](err); !ok {
		t.Errorf("a NaN argument: %T %v, want json's UnsupportedValueError (Call tells it from a broken pipe)", err, err)
	}
	if _, ok := appendCallJSON(nil, callMsg{Kind: "call", Method: "plan", Args: map[string]any{}, TimeoutS: math.Inf(1)}); ok {
		t.Error("an infinite timeout was encoded")
	}
}

// randomString draws a string of runes and bytes chosen to hit the encoder's branches.
func randomString(r *rand.Rand) string {
	var b strings.Builder
	for n := r.Intn(12); n > 0; n-- {
		switch r.Intn(6) {
		case 0:
			b.WriteByte(byte(r.Intn(256))) // any byte, invalid UTF-8 included
		case 1:
			b.WriteByte(byte(r.Intn(0x20)))
		case 2:
			b.WriteString(strangeStrings[r.Intn(len(strangeStrings))])
		case 3:
			b.WriteRune(rune(r.Intn(0x110000)))
		default:
			b.WriteByte(byte(0x20 + r.Intn(0x60)))
		}
	}
	return b.String()
}

// randomValue draws an argument tree of the types callbacks' arguments are built of.
func randomValue(r *rand.Rand, depth int) any {
	k := r.Intn(12)
	if depth > 4 {
		k %= 7
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2:
		return randomString(r)
	case 3:
		return math.Float64frombits(r.Uint64()) // NaN and the infinities included: json.Marshal refuses them
	case 4:
		return (r.Float64() - 0.5) * math.Pow(10, float64(r.Intn(60)-30))
	case 5:
		return r.Int63() - r.Int63()
	case 6:
		return r.Intn(1000)
	case 7, 8:
		m := map[string]any{}
		for n := r.Intn(5); n > 0; n-- {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		return m
	case 9:
		l := []any{}
		for n := r.Intn(5); n > 0; n-- {
			l = append(l, randomValue(r, depth+1))
		}
		return l
	case 10:
		return []string{randomString(r), randomString(r)}
	default:
		return map[string]string{randomString(r): randomString(r)}
	}
}

// TestCallEncoderOnRandomArguments compares the hand-written encoder with json.Marshal on random argument
// trees (a property test; FuzzCallEncoder explores strings and numbers further).
func TestCallEncoderOnRandomArguments(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	fast := 0
	for i := 0; i < 20000; i++ {
		m := callMsg{Kind: "call", ID: r.Int63(), Method: randomString(r), Args: randomValue(r, 0), TimeoutS: r.Float64() * 100}
		if checkCallEncoding(t, m) {
			fast++
		}
	}
	if fast < 15000 {
		t.Errorf("the hand-written encoder took %d of 20,000 random calls; most hold only plain values", fast)
	}
}

// FuzzCallEncoder: for any strings, numbers and nesting, the hand-written call encoder writes what
// json.Marshal writes, byte for byte, or leaves the call to it.
func FuzzCallEncoder(f *testing.F) {
	for i, s := range strangeStrings {
		f.Add(s, s+"k", float64(i)*1.5e-7, int64(i)-3, uint8(i))
	}
	f.Add("", "", math.Inf(1), int64(math.MinInt64), uint8(255))
	f.Fuzz(func(t *testing.T, s, key string, x float64, n int64, shape uint8) {
		var args any = map[string]any{key: s, "x": x, "n": n, "l": []any{s, x, n, nil, true}, "m": map[string]string{s: key}}
		for i := 0; i < int(shape%8); i++ {
			args = map[string]any{key: args, s: []any{args}}
		}
		if shape&0x80 != 0 {
			args = []string{s, key}
		}
		checkCallEncoding(t, callMsg{Kind: "call", ID: n, Method: s, Args: args, TimeoutS: math.Abs(x)})
	})
}

// checkReplyDecoding decodes body by decodeReply and by json.Unmarshal and fails unless they agree: the same
// error, or the same reply.
func checkReplyDecoding(t *testing.T, body []byte) (fast bool) {
	t.Helper()
	var want replyMsg
	wantErr := json.Unmarshal(body, &want)
	var quick replyMsg
	fast = fastReply(body, &quick)
	if fast && wantErr != nil {
		t.Fatalf("fastReply took a body json.Unmarshal refuses (%v): %q", wantErr, preview(body))
	}
	if fast && !reflect.DeepEqual(quick, want) {
		t.Fatalf("fastReply decoded %q\n as %#v\nwant %#v", body, quick, want)
	}
	var got replyMsg
	err := decodeReply(body, &got)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("decodeReply error %v, json.Unmarshal error %v, for %q", err, wantErr, preview(body))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeReply decoded %q\n as %#v\nwant %#v", body, got, want)
	}
	return fast
}

// harnessReplies are reply bodies as the harness writes them (captured from the reference provider's plan and
// from the good fixture's callbacks; TestRealRepliesTakeTheFastDecoder checks live ones).
var harnessReplies = []string{
	`{"kind":"reply","id":5302,"ok":true,"value":{"type":"RuntimePreparationPlan","repr":"RuntimePreparationPlan(session_bound=True, declaration={'format': 1, 'audience': 'astrabox-tools', 'packages': [{'name': 'tools', 'ref': 'v1'}], 'skills': ['summarize']})","session_bound":true,"declaration":{"format":1,"audience":"astrabox-tools","packages":[{"name":"tools","ref":"v1"}],"skills":["summarize"]},"declaration_error":null},"error":null,"duration_ns":41279,"observations":{"logs":[],"warnings":[],"audit":[],"dropped":0,"leftovers":{"threads":[],"tasks":[],"timers":[],"children":[]}},"markers":false,"cancel_received":false,"held_past_deadline":false,"waited_units":[],"coverage":null}`,
	`{"kind":"reply","id":3,"ok":false,"value":null,"error":{"type":"RuntimeError","message":"cannot recover op-9 \u00e9\ud83d\ude80 \udcff","repr":"RuntimeError('x')","traceback":"Traceback...\n","cancelled":false,"frames":[{"file":"/p/provider.py","line":12,"function":"recover"}],"user_action":null},"duration_ns":9,"observations":{"logs":[{"logger":"p","level":"INFO","levelno":20,"message":"m\u2028\u0000","exc_text":null,"file":"f.py","line":3,"function":"f","thread":"MainThread","call":3,"after_return":false}],"warnings":[],"audit":[],"dropped":2,"leftovers":{"threads":[{"name":"t","daemon":true,"target":"f","file":"x.py","line":1}],"tasks":[],"timers":[{"callback":"cb","when_s":0.5}],"children":[{"pid":9,"cmdline":"sleep 9"}]},"connections":[{"seq":1,"port":4000,"dest_port":80,"file":"","line":0,"function":"","call":null,"after_return":true}]},"markers":true,"cancel_received":true,"held_past_deadline":true,"waited_units":[1,2,3],"exit":{"exception":"SystemExit","code":3},"coverage":{"mode":"monitoring","branches":true,"files":{"a.py":{"lines":[1,2],"branches":[2],"functions":[["f",1,2]]}},"hits":[]}}`,
	`{"kind":"reply","id":1,"ok":true,"value":{"type":"RuntimeMaterials","files":[{"name":"a","content_b64":"aGk="}],"environment":{"K":"v"},"turn_validity_seconds":"inf","was_sync":true},"error":null,"duration_ns":5,"observations":{"logs":[],"warnings":[],"audit":[],"dropped":0,"leftovers":{"threads":[],"tasks":[],"timers":[],"children":[]}},"markers":false,"cancel_received":false,"held_past_deadline":false,"waited_units":[7]}`,
	`{"kind":"reply","id":2,"ok":true,"value":{"type":"settle","settled":true,"remaining":{"threads":[],"tasks":[],"timers":[],"children":[]},"waited_s":0.01},"error":null,"duration_ns":10000000,"observations":{"logs":[],"warnings":[],"audit":[],"dropped":0,"leftovers":{"threads":[],"tasks":[],"timers":[],"children":[]}},"markers":false,"cancel_received":false,"held_past_deadline":false,"waited_units":[],"coverage":null}`,
	`{"kind":"reply","id":4,"ok":true,"value":{"module_file":"/p/m.py","qualname":"P","methods":{"plan":{"overridden":true,"async":false,"file":"/p/m.py","line":3}}},"error":null,"duration_ns":1,"observations":{"logs":[],"warnings":[],"audit":[],"dropped":0,"leftovers":{"threads":[],"tasks":[],"timers":[],"children":[]}},"markers":true,"cancel_received":false,"held_past_deadline":false,"waited_units":[]}`,
}

func TestReplyDecoderMatchesEncodingJSON(t *testing.T) {
	for _, body := range harnessReplies {
		if !checkReplyDecoding(t, []byte(body)) {
			t.Errorf("fastReply did not take a reply as the harness writes it: %s", body)
		}
	}
	for _, body := range []string{
		`{}`, ` {"kind":"reply"} `, `{"kind":"reply","id":-0}`, `{"kind":"reply","id":1e3}`, `{"kind":"reply","id":1.0}`,
		`{"kind":"reply","id":01}`, `{"kind":"reply","id":9223372036854775808}`, `{"kind":"reply","id":-9223372036854775808}`,
		`{"kind":"reply","id":null}`, `{"kind":"reply","ok":null}`, `{"kind":"reply","ok":"true"}`, `{"kind":"reply","ID":3}`,
		`{"kind":"reply","id":1,"id":2}`, `{"kind":"reply","extra":{"a":[1]}}`, `{"kind":"r\u0065ply"}`, `{"kind":"\xff"}`,
		`{"kind":"reply","value":}`, `{"kind":"reply","value":nul}`, `{"kind":"reply","value":"\x01"}`, `{"kind":"reply","value":"\xff\xfe"}`,
		`{"kind":"reply","value":[1,]}`, `{"kind":"reply","value":{"a":1,}}`, `{"kind":"reply","value":{"a" 1}}`, `{"kind":"reply","value":"\u12"}`,
		`{"kind":"reply","value":-}`, `{"kind":"reply","value":1.}`, `{"kind":"reply","value":1e}`, `{"kind":"reply","value":.5}`, `{"kind":"reply","value":"\q"}`,
		`{"kind":"reply","value":null}`, `{"kind":"reply","value":  [ 1 , -2.5e+3 , "x" , {} , [ ] , true , false , null ] }`,
		`{"kind":"reply","error":null,"exit":null,"coverage":null,"markers":null,"waited_units":null}`,
		`{"kind":"reply","error":{"type":5}}`, `{"kind":"reply","error":[]}`, `{"kind":"reply","error":{"Type":"X","TYPE":"Y"}}`,
		`{"kind":"reply","observations":null}`, `{"kind":"reply","observations":{"logs":null}}`, `{"kind":"reply","observations":{"dropped":"x"}}`,
		`{"kind":"reply","waited_units":[]}`, `{"kind":"reply","waited_units":[1 , 2]}`, `{"kind":"reply","waited_units":[1.5]}`, `{"kind":"reply","waited_units":[1,]}`,
		`{"kind":"reply","waited_units":{}}`, `{"kind":"reply","coverage":{"files":{"a":{"functions":[[1]]}}}}`,
		`{"kind":"reply"}x`, `{"kind":"reply"}}`, `{"kind":"reply",}`, `{"kind":"reply" "id":1}`, `{"kind":"reply"`, `[1]`, `"reply"`, ``, `{`,
		"{\"kind\":\"reply\",\"value\":\"a\u2028b\"}", "\t{\"kind\"\n:\r\"reply\" }\n",
	} {
		checkReplyDecoding(t, []byte(body))
	}
	// Nesting: encoding/json refuses past 10,000 levels (the reply object is the first), and so does decodeReply.
	for _, depth := range []int{maxNestingDepth - 2, maxNestingDepth - 1, maxNestingDepth, maxNestingDepth + 1} {
		for _, key := range []string{"value", "error", "observations", "coverage"} {
			v := strings.Repeat("[", depth) + strings.Repeat("]", depth)
			if key != "value" {
				v = `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
			}
			checkReplyDecoding(t, []byte(`{"kind":"reply","`+key+`":`+v+`}`))
		}
	}
}

// TestReplyDecoderOnRandomReplies mutates the harness's replies byte by byte (a property test beside
// FuzzReplyDecoder): whatever the bytes, decodeReply agrees with json.Unmarshal.
func TestReplyDecoderOnRandomReplies(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	alphabet := []byte(`{}[]":,0123456789-+.eE \ntruefalsnul\\u"` + "\x00\x1f\x7f\xff\xc3")
	for i := 0; i < 20000; i++ {
		body := []byte(harnessReplies[r.Intn(len(harnessReplies))])
		for n := 1 + r.Intn(3); n > 0; n-- {
			p := r.Intn(len(body))
			switch r.Intn(3) {
			case 0:
				body[p] = alphabet[r.Intn(len(alphabet))]
			case 1:
				body = append(body[:p], body[p+1:]...)
			default:
				body = append(body[:p], append([]byte{alphabet[r.Intn(len(alphabet))]}, body[p:]...)...)
			}
		}
		checkReplyDecoding(t, body)
	}
}

// FuzzReplyDecoder: for any bytes, decodeReply decodes what json.Unmarshal decodes and refuses what it
// refuses, with its error; and fastReply never takes a body json.Unmarshal refuses.
func FuzzReplyDecoder(f *testing.F) {
	for _, body := range harnessReplies {
		f.Add([]byte(body))
	}
	f.Add([]byte(`{"kind":"reply","value":"\xff\ud800","waited_units":[1,-2],"markers":null}`))
	f.Add([]byte(`{"kind":"reply","id":1,"id":2}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkReplyDecoding(t, body)
	})
}

// TestEmptyObservationsAreWhatTheHarnessWrites holds emptyObservations to the bytes the harness writes for a
// call that observed nothing, so that a change of records.py's field order is seen here rather than as a
// silent return to json.Unmarshal for every reply.
func TestEmptyObservationsAreWhatTheHarnessWrites(t *testing.T) {
	out := runHarnessPython(t, `from astrabox._harness import records, wire
import sys
sys.stdout.write(wire._dumps(records.Observations().wire()))`)
	if out != string(emptyObservations) {
		t.Fatalf("the harness writes empty observations as\n%s\nnot\n%s", out, emptyObservations)
	}
	var o Observations
	if err := json.Unmarshal(emptyObservations, &o); err != nil || !o.Empty() {
		t.Fatalf("emptyObservations decode to %+v, %v", o, err)
	}
}

// TestRealRepliesTakeTheFastDecoder runs callbacks of every kind through a real harness (values of each
// result type, an error, observations, a cancelled call, a call past its deadline) and checks that every
// reply it writes is taken by fastReply and decoded as json.Unmarshal decodes it.
func TestRealRepliesTakeTheFastDecoder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python (skipped under -short)")
	}
	var mu sync.Mutex
	var bodies [][]byte
	sawReply = func(body []byte) {
		mu.Lock()
		bodies = append(bodies, bytes.Clone(body))
		mu.Unlock()
	}
	defer func() { sawReply = nil }()
	dir := fixtureDir(t, "good")
	sb := &fakeSandbox{files: map[string][]byte{}}
	p, _ := startLoaded(t, dir, "good_provider.provider:Provider", Options{Sandbox: sb, Replica: "r1"})
	files := t.TempDir()
	for _, c := range []struct {
		method  string
		args    map[string]any
		timeout time.Duration
	}{
		{"plan", map[string]any{"config": map[string]any{"region": "eu \u2028 \xff <&>"}}, 5 * time.Second},
		{"prepare_session", sessionArgs(files), 5 * time.Second},
		{"prepare_turn", turnArgs(files), 5 * time.Second},
		{"recover", map[string]any{"operation": map[string]any{"agent_id": "a-1", "operation_id": "op-9", "deadline": 1e10}}, 5 * time.Second},
		{"read_user_actions", map[string]any{"context": map[string]any{"session_id": "slow", "owner_id": "u-1", "agent_id": "a-1"}}, 200 * time.Millisecond},
		{"plan", map[string]any{"config": map[string]any{"sleep": 0.1}}, 20 * time.Millisecond},
		{"perform_user_action", map[string]any{"context": map[string]any{"session_id": "s-1", "owner_id": "u-1", "agent_id": "a-1"}, "action_id": "check"}, 5 * time.Second},
	} {
		if _, err := call(t, p, c.method, c.args, c.timeout); err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) < 8 {
		t.Fatalf("saw %d replies, want the load's and 7 callbacks'", len(bodies))
	}
	for _, body := range bodies {
		if !utf8.Valid(body) {
			t.Errorf("a reply is not UTF-8: %q", preview(body))
		}
		if !checkReplyDecoding(t, body) {
			t.Errorf("fastReply did not take a reply the harness wrote: %s", body)
		}
	}
}

// runHarnessPython runs a Python snippet with the embedded SDK importable and returns its standard output.
func runHarnessPython(t *testing.T, code string) string {
	t.Helper()
	skipShort(t)
	sdk, err := SDKDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-c", code)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+sdk)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return string(out)
}

// BenchmarkCallCodec measures the kit's encoding of a plan call (the benchmark suite's arguments) and
// decoding of the reference provider's plan reply, by encoding/json (as before the hand-written codec) and
// by the hand-written codec.
func BenchmarkCallCodec(b *testing.B) {
	args := map[string]any{"config": map[string]any{
		"agent":      map[string]any{"display_name": "Sample support agent", "model": "claude-sonnet-4", "instructions": "Trusted instructions 00000001: answer questions about the sample repository politely."},
		"deployment": map[string]any{"base_url": "${ASTRABOX_DOUBLE_URL}", "audience": "astrabox-tools"},
		"packages":   []any{map[string]any{"name": "tools", "source": "git+https://example.invalid/tools.git", "ref": "v1"}},
		"skills":     []any{"summarize"}, "secrets": map[string]any{"model_api_key": "", "client_secret": ""},
	}}
	m := callMsg{Kind: "call", ID: 5302, Method: "plan", Args: args, TimeoutS: 5}
	reply := []byte(harnessReplies[0])
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			body, _ := json.Marshal(m)
			_ = writeBody(io.Discard, body)
			var r replyMsg
			if err := json.Unmarshal(reply, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hand-written", func(b *testing.B) {
		for b.Loop() {
			frame, _ := encodeFrame(m)
			_, _ = io.Discard.Write(frame)
			var r replyMsg
			if err := decodeReply(reply, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
