package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// decodeEvery decodes a frame body the way the client does (envelope, then the message of its kind), and
// every reply value the way callers do (callback result, load info, settle result). None may panic, and the
// client's reply decoder (decodeReply) must decode or refuse it exactly as json.Unmarshal does.
func decodeEvery(t *testing.T, body []byte) {
	var env envelope
	_ = json.Unmarshal(body, &env)
	var h Hello
	if json.Unmarshal(body, &h) == nil {
		_ = h.PythonVersion()
	}
	checkReplyDecoding(t, body) // the client's hand-written decoder agrees with encoding/json
	var r replyMsg
	if json.Unmarshal(body, &r) == nil {
		rep := &Reply{ID: r.ID, OK: r.OK, Value: r.Value, Error: r.Error, Observations: r.Observations, Exit: r.Exit}
		if res, err := rep.Result(); err == nil && res != nil {
			_ = ReadFileValue([]byte(res.Repr))
		}
		_, _ = rep.LoadInfo()
		var sr SettleResult
		_ = json.Unmarshal(r.Value, &sr)
		_ = sr.Remaining.Empty()
		if r.Error != nil {
			_ = r.Error.Error()
		}
		var o Observations
		o.Merge(r.Observations)
		_ = o.Empty()
	}
	var bg backgroundMsg
	_ = json.Unmarshal(body, &bg)
	var sq SandboxRequest
	_ = json.Unmarshal(body, &sq)
}

// FuzzReadFrame feeds the reply channel's bytes to the frame reader and every message decoder: any input
// ends in frames or an error (never a panic, never an allocation the length header alone asks for past
// MaxFrame), and every frame read is one JSON object that WriteFrame writes back as a frame ReadFrame reads.
func FuzzReadFrame(f *testing.F) {
	f.Add(frame(`{"kind":"hello","protocol":1,"cookie":"c","pid":7,"python":[3,11,7],"implementation":"cpython","executable":"/usr/bin/python3"}`))
	f.Add(frame(`{"kind":"reply","id":1,"ok":true,"value":{"type":"RuntimeMaterials","files":[{"name":"a","content_b64":"aGk="}],"environment":{"K":"v"},"turn_validity_seconds":"inf"},"duration_ns":5,"observations":{"logs":[{"level":"INFO","message":"m","file":"f.py","line":3}]}}`))
	f.Add(frame(`{"kind":"reply","id":2,"ok":false,"error":{"type":"ValueError","message":"x","frames":[{"file":"p.py","line":1,"function":"f"}],"user_action":{"message":"m","url":null}}}`))
	f.Add(frame(`{"kind":"background","observations":{}}`))
	f.Add(frame(`{"kind":"sandbox","id":3,"call":1,"sandbox_id":"sb","op":"write_file","path":"/x","content_b64":"AAAA","mode":420}`))
	f.Add(append(frame(`{"kind":"reply","id":1,"ok":true,"value":{"type":"none"}}`), 0xff, 0xff, 0xff))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for i := 0; i < 64; i++ {
			body, err := ReadFrame(r)
			if err != nil {
				if errors.Is(err, io.EOF) && i == 0 && len(data) > 0 {
					t.Fatalf("EOF before any frame of a non-empty stream")
				}
				return
			}
			if !isJSONObject(body) {
				t.Fatalf("ReadFrame returned a body that is not a JSON object: %q", preview(body))
			}
			decodeEvery(t, body)
			var buf bytes.Buffer
			if err := WriteFrame(&buf, json.RawMessage(body)); err != nil {
				t.Fatalf("write back: %v", err)
			}
			again, err := ReadFrame(&buf)
			if err != nil {
				t.Fatalf("a frame WriteFrame wrote does not read back: %v", err)
			}
			var a, b any
			if json.Unmarshal(body, &a) != nil || json.Unmarshal(again, &b) != nil {
				t.Fatal("round trip lost the JSON")
			}
		}
	})
}

// FuzzFrameDeep feeds frames whose values nest or repeat far past anything a harness writes: deep arrays and
// objects in a reply value and in observations, and long lists of files and log records. Decoding refuses or
// accepts them, never crashes.
func FuzzFrameDeep(f *testing.F) {
	f.Add(uint32(20000), uint8(0), uint32(1))
	f.Add(uint32(50), uint8(1), uint32(19999))
	f.Add(uint32(9999), uint8(2), uint32(10))
	f.Fuzz(func(t *testing.T, depth uint32, kind uint8, count uint32) {
		d, n := int(depth%30000), int(count%20000)
		var b strings.Builder
		switch kind % 3 {
		case 0:
			b.WriteString(`{"kind":"reply","id":1,"ok":true,"value":{"type":"RuntimePreparationPlan","declaration":`)
			b.WriteString(strings.Repeat(`{"a":[`, d) + "1" + strings.Repeat("]}", d))
			b.WriteString(`}}`)
		case 1:
			b.WriteString(`{"kind":"reply","id":1,"ok":true,"value":{"type":"RuntimeMaterials","files":[`)
			for i := 0; i < n; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"name":"f","content_b64":"aGk="}`)
			}
			b.WriteString(`],"environment":{}}}`)
		default:
			b.WriteString(`{"kind":"background","observations":{"logs":[`)
			for i := 0; i < n%2000; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"level":"INFO","message":` + strings.Repeat("[", d%5000) + `"m"` + strings.Repeat("]", d%5000) + `}`)
			}
			b.WriteString(`]}}`)
		}
		body, err := ReadFrame(bytes.NewReader(frame(b.String())))
		if err != nil {
			return
		}
		decodeEvery(t, body)
	})
}
