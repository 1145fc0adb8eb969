package harness

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MaxFrame is the largest frame either side may send (64 MiB).
const MaxFrame = 64 << 20

// ErrFrameTooLarge is returned for a frame longer than MaxFrame.
var ErrFrameTooLarge = errors.New("frame larger than 64 MiB")

// WriteFrame encodes v as JSON and writes it as one frame: a 4-byte
// big-endian length followed by the JSON bytes, in a single Write.
func WriteFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	return writeBody(w, body)
}

// writeBody writes body, already JSON, as one frame in a single Write.
func writeBody(w io.Writer, body []byte) error {
	if len(body) > MaxFrame {
		return fmt.Errorf("encode frame of %d bytes: %w", len(body), ErrFrameTooLarge)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame and returns its JSON body. It returns io.EOF
// when the stream ends cleanly before a frame, io.ErrUnexpectedEOF (wrapped)
// when it ends inside one, ErrFrameTooLarge (wrapped) for an oversized
// length, and an error for a body that is not one JSON object.
func ReadFrame(r io.Reader) (json.RawMessage, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if !isJSONObject(body) {
		return nil, fmt.Errorf("frame of %d bytes is not a JSON object: %q", len(body), preview(body))
	}
	return body, nil
}

// readBody reads one frame as ReadFrame does, without checking that its body is JSON: for a reader that
// decodes the body at once (json.Unmarshal checks it whole before it decodes), a second pass over it first.
func readBody(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("read frame header: stream ended after a partial length: %w", err)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("frame length %d (header % x): %w", n, hdr, ErrFrameTooLarge)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read frame body (%d bytes announced): %w", n, err)
	}
	return body, nil
}

func isJSONObject(b []byte) bool {
	if !json.Valid(b) {
		return false
	}
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

func preview(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// The hand-written codec of the per-call messages. A callback's round trip encodes one call and decodes one
// reply on the kit's side; encoding/json does both by reflection, which cost about 30 µs of the kit's CPU per
// call (docs/performance.md, "Hand-written codec"). appendCallJSON and decodeReply do the same work directly.
// Neither is a second definition of the wire format: each handles the shapes the two sides actually exchange
// and hands everything else to encoding/json, and the tests (TestCallEncoderMatchesEncodingJSON,
// FuzzCallEncoder, FuzzReplyDecoder) hold them to encoding/json's bytes and values.

// maxNestingDepth is encoding/json's limit on nested arrays and objects: a deeper document is invalid.
const maxNestingDepth = 10000

// maxFastDepth bounds the nesting appendValueJSON follows itself; deeper arguments (or a cycle) go to
// json.Marshal, which detects cycles.
const maxFastDepth = 64

// encodeFrame encodes v as one frame, its 4-byte length header included: calls and cancels by the
// hand-written encoder, anything else (or a call whose arguments it does not know) by json.Marshal.
func encodeFrame(v any) ([]byte, error) {
	buf := make([]byte, 4, 512)
	ok := false
	switch m := v.(type) {
	case callMsg:
		buf, ok = appendCallJSON(buf, m)
	case cancelMsg:
		buf, ok = appendCancelJSON(buf, m), true
	}
	if !ok {
		body, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		buf = append(buf[:4], body...)
	}
	n := len(buf) - 4
	if n > MaxFrame {
		return nil, fmt.Errorf("encode frame of %d bytes: %w", n, ErrFrameTooLarge)
	}
	binary.BigEndian.PutUint32(buf, uint32(n))
	return buf, nil
}

// appendCallJSON appends what json.Marshal(m) writes; ok is false when an argument is of a type
// appendValueJSON leaves to encoding/json (dst then holds a partial encoding the caller drops).
func appendCallJSON(dst []byte, m callMsg) ([]byte, bool) {
	dst = append(dst, `{"kind":`...)
	dst = appendStringJSON(dst, m.Kind)
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendInt(dst, m.ID, 10)
	dst = append(dst, `,"method":`...)
	dst = appendStringJSON(dst, m.Method)
	dst = append(dst, `,"args":`...)
	dst, ok := appendValueJSON(dst, m.Args, 0)
	if !ok {
		return dst, false
	}
	if m.TimeoutS != 0 { // omitempty
		dst = append(dst, `,"timeout_s":`...)
		if dst, ok = appendFloatJSON(dst, m.TimeoutS); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendCancelJSON appends what json.Marshal(m) writes.
func appendCancelJSON(dst []byte, m cancelMsg) []byte {
	dst = append(dst, `{"kind":`...)
	dst = appendStringJSON(dst, m.Kind)
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendInt(dst, m.ID, 10)
	return append(dst, '}')
}

// appendValueJSON appends what json.Marshal(v) writes, for the values callbacks' arguments are built of:
// nil, booleans, strings, float64 and integers, and maps of strings and slices of them. ok is false for any
// other type, a non-finite float (json.Marshal refuses it) and nesting past maxFastDepth.
func appendValueJSON(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxFastDepth {
		return dst, false
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendStringJSON(dst, x), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case float64:
		return appendFloatJSON(dst, x)
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case map[string]any:
		return appendMapJSON(dst, x, depth)
	case map[string]string:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '{')
		var buf [16]string
		for i, k := range sortedKeys(x, buf[:0]) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStringJSON(dst, k)
			dst = append(dst, ':')
			dst = appendStringJSON(dst, x[k])
		}
		return append(dst, '}'), true
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendValueJSON(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case []string:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStringJSON(dst, e)
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// appendMapJSON appends a map[string]any as json.Marshal does: keys sorted byte-wise.
func appendMapJSON(dst []byte, m map[string]any, depth int) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '{')
	var buf [16]string
	for i, k := range sortedKeys(m, buf[:0]) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendStringJSON(dst, k)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendValueJSON(dst, m[k], depth+1); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// sortedKeys returns m's keys in the order json.Marshal writes them, in keys (a caller's buffer on its stack, so
// that a small map's keys are not allocated) or in a new slice when they do not fit.
func sortedKeys[V any](m map[string]V, keys []string) []string {
	if cap(keys) < len(m) {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendFloatJSON appends f as json.Marshal writes a float64 (ES6 number formatting: 'f' between 1e-6 and
// 1e21, 'e' outside, "e-09" shortened to "e-9"); ok is false for NaN and the infinities, which it refuses.
func appendFloatJSON(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// jsonSafe marks the ASCII bytes json.Marshal writes as they are in a string: printable, and neither '"',
// '\\' nor the HTML-sensitive '<', '>' and '&' (which it escapes by default).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendStringJSON appends s as a JSON string exactly as json.Marshal writes it: short escapes for '"', '\\',
// \b, \f, \n, \r and \t, \u00XX for the other control bytes and for '<', '>' and '&', \ufffd for each byte of
// invalid UTF-8, and \u2028 and \u2029 escaped.
func appendStringJSON(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// decodeReply decodes a reply frame's body into r as json.Unmarshal does, and fails as it does. The reply as
// the harness writes it is decoded directly (fastReply); anything fastReply does not take whole (a key it
// does not know or meets twice, a number or literal of another form, bad JSON anywhere) is decoded by
// json.Unmarshal from scratch, so a bad frame fails with encoding/json's own error.
func decodeReply(body []byte, r *replyMsg) error {
	if fastReply(body, r) {
		return nil
	}
	*r = replyMsg{}
	return json.Unmarshal(body, r)
}

// The keys of a reply, as bits of fastReply's set of keys seen.
const (
	replyKind = 1 << iota
	replyID
	replyOK
	replyValue
	replyError
	replyDuration
	replyObservations
	replyMarkers
	replyCancelReceived
	replyHeld
	replyWaited
	replyExit
	replyCoverage
)

// replyKeys maps a reply's keys, spelt exactly as the harness writes them, to their bits.
var replyKeys = map[string]int{
	"kind": replyKind, "id": replyID, "ok": replyOK, "value": replyValue, "error": replyError,
	"duration_ns": replyDuration, "observations": replyObservations, "markers": replyMarkers,
	"cancel_received": replyCancelReceived, "held_past_deadline": replyHeld, "waited_units": replyWaited,
	"exit": replyExit, "coverage": replyCoverage,
}

// emptyObservations is the observations of a call that observed nothing, as the harness writes them
// (records.Observations.wire): decoded without a pass of encoding/json.
var emptyObservations = []byte(`{"logs":[],"warnings":[],"audit":[],"dropped":0,"leftovers":{"threads":[],"tasks":[],"timers":[],"children":[]}}`)

// fastReply decodes body into r (zero on entry) and reports whether it could: a JSON object whose keys are
// the reply's own, each once and spelt exactly, with integers, literals and simple strings where
// json.Unmarshal would take them. Values of other shapes (the error, exit and coverage objects, observations
// that are not empty) go to json.Unmarshal one by one, once checked to be valid JSON at their depth; the
// value is kept as the bytes it is (a json.RawMessage), checked the same way. Any doubt returns false.
func fastReply(body []byte, r *replyMsg) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return skipSpace(body, i+1) == len(body)
	}
	seen := 0
	for {
		key, next, ok := plainString(body, i)
		if !ok {
			return false
		}
		bit := replyKeys[string(key)]
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		i = skipSpace(body, next)
		if i >= len(body) || body[i] != ':' {
			return false
		}
		i = skipSpace(body, i+1)
		if i, ok = replyField(body, i, bit, r); !ok {
			return false
		}
		i = skipSpace(body, i)
		if i >= len(body) {
			return false
		}
		if body[i] == '}' {
			return skipSpace(body, i+1) == len(body)
		}
		if body[i] != ',' {
			return false
		}
		i = skipSpace(body, i+1)
	}
}

// replyField decodes the value at body[i:] of the reply key bit into r, and returns where it ends.
func replyField(body []byte, i, bit int, r *replyMsg) (int, bool) {
	switch bit {
	case replyKind:
		s, end, ok := plainString(body, i)
		r.Kind = string(s)
		return end, ok
	case replyID:
		return plainInt(body, i, &r.ID)
	case replyDuration:
		return plainInt(body, i, &r.DurationNS)
	case replyOK:
		return plainBool(body, i, &r.OK)
	case replyCancelReceived:
		return plainBool(body, i, &r.CancelReceived)
	case replyHeld:
		return plainBool(body, i, &r.HeldPastDeadline)
	case replyMarkers:
		if end, ok := literal(body, i, "null"); ok {
			return end, true
		}
		var b bool
		end, ok := plainBool(body, i, &b)
		r.Markers = &b
		return end, ok
	case replyValue:
		end, ok := skipValue(body, i, 1)
		r.Value = json.RawMessage(body[i:end:end])
		return end, ok
	case replyWaited:
		return intList(body, i, &r.WaitedUnits)
	case replyObservations:
		end, ok := skipValue(body, i, 1)
		if !ok || body[i] != '{' {
			return end, false
		}
		if bytes.Equal(body[i:end], emptyObservations) {
			r.Observations = Observations{Logs: []LogRecord{}, Warnings: []WarningRecord{}, Audit: []AuditEvent{},
				Leftovers: Leftovers{Threads: []LeftoverThread{}, Tasks: []LeftoverTask{}, Timers: []LeftoverTimer{}, Children: []LeftoverChild{}}}
			return end, true
		}
		return end, json.Unmarshal(body[i:end], &r.Observations) == nil
	case replyError:
		return objectOrNull(body, i, &r.Error)
	case replyExit:
		return objectOrNull(body, i, &r.Exit)
	case replyCoverage:
		return objectOrNull(body, i, &r.Coverage)
	}
	return i, false
}

// objectOrNull decodes null (leaving *dst nil) or a valid JSON object at body[i:], by json.Unmarshal, into
// *dst.
func objectOrNull[T any](body []byte, i int, dst **T) (int, bool) {
	if end, ok := literal(body, i, "null"); ok {
		return end, true
	}
	end, ok := skipValue(body, i, 1)
	if !ok || body[i] != '{' {
		return end, false
	}
	return end, json.Unmarshal(body[i:end], dst) == nil
}

// skipSpace returns the index of the first byte at or after i that is not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// literal matches the literal lit (true, false, null) at b[i:].
func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// plainBool decodes true or false at b[i:].
func plainBool(b []byte, i int, dst *bool) (int, bool) {
	if end, ok := literal(b, i, "true"); ok {
		*dst = true
		return end, true
	}
	end, ok := literal(b, i, "false")
	*dst = false
	return end, ok
}

// plainInt decodes an integer at b[i:] written as JSON writes one ('-'? then 0 or a digit string without a
// leading zero; no fraction, no exponent) that fits an int64.
func plainInt(b []byte, i int, dst *int64) (int, bool) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == digits || (b[digits] == '0' && i-digits > 1) {
		return i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return i, false
	}
	v, err := strconv.ParseInt(string(b[start:i]), 10, 64)
	*dst = v
	return i, err == nil
}

// intList decodes an array of plainInt integers (or null) at b[i:]: a non-nil slice, as json.Unmarshal makes.
func intList(b []byte, i int, dst *[]int64) (int, bool) {
	if end, ok := literal(b, i, "null"); ok {
		return end, true
	}
	if i >= len(b) || b[i] != '[' {
		return i, false
	}
	out := []int64{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		*dst = out
		return i + 1, true
	}
	for {
		var v int64
		var ok bool
		if i, ok = plainInt(b, i, &v); !ok {
			return i, false
		}
		out = append(out, v)
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		if b[i] == ']' {
			*dst = out
			return i + 1, true
		}
		if b[i] != ',' {
			return i, false
		}
		i = skipSpace(b, i+1)
	}
}

// plainString returns the contents of the JSON string at b[i:] when it needs no decoding (printable ASCII,
// no escape), and where it ends.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, j, false
		}
	}
	return nil, len(b), false
}

// skipValue returns where the JSON value at b[i:] ends, and whether it is one that encoding/json accepts
// there: depth is the nesting of the arrays and objects around it (the reply object is 1), and a value that
// nests past maxNestingDepth is refused, as encoding/json refuses it.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		return skipComposite(b, i, depth+1)
	case c == '"':
		return skipString(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	}
	return i, false
}

// skipComposite skips the array or object at b[i:], itself at nesting depth.
func skipComposite(b []byte, i, depth int) (int, bool) {
	if depth > maxNestingDepth {
		return i, false
	}
	object := b[i] == '{'
	closing := byte(']')
	if object {
		closing = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if object {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = skipString(b, i); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = skipValue(b, i, depth); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		if b[i] == closing {
			return i + 1, true
		}
		if b[i] != ',' {
			return i, false
		}
		i = skipSpace(b, i+1)
	}
}

// skipString skips the JSON string at b[i:] (b[i] is '"'): control bytes are refused, escapes must be one of
// JSON's, any other byte (invalid UTF-8 included) is taken, as encoding/json's scanner does.
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return i, false
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// skipNumber skips the JSON number at b[i:]: '-'?, 0 or a digit string without a leading zero, an optional
// fraction and an optional exponent.
func skipNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		start := i + 1
		if i = skipDigits(b, start); i == start {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		if i = skipDigits(b, start); i == start {
			return i, false
		}
	}
	return i, true
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
