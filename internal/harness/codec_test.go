package harness

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := map[string]any{"kind": "call", "id": 7, "args": map[string]string{"x": "é\x00"}}
	if err := WriteFrame(&buf, in); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(&buf, map[string]string{"kind": "shutdown"}); err != nil {
		t.Fatal(err)
	}
	n := binary.BigEndian.Uint32(buf.Bytes()[:4])
	if int(n) != buf.Len()-4-len(`{"kind":"shutdown"}`)-4 {
		t.Fatalf("length prefix %d does not match the body", n)
	}
	b1, err := ReadFrame(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b1), `"id":7`) || !strings.Contains(string(b1), `"x":"é\u0000"`) {
		t.Fatalf("first frame = %s", b1)
	}
	b2, err := ReadFrame(&buf)
	if err != nil || string(b2) != `{"kind":"shutdown"}` {
		t.Fatalf("second frame = %s, %v", b2, err)
	}
	if _, err := ReadFrame(&buf); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func frame(body string) []byte {
	b := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	copy(b[4:], body)
	return b
}

func TestReadFrameErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		is   error
		text string
	}{
		{"oversize", []byte{0x7f, 0xff, 0xff, 0xff, '{'}, ErrFrameTooLarge, "larger than 64 MiB"},
		{"just over the limit", binary.BigEndian.AppendUint32(nil, MaxFrame+1), ErrFrameTooLarge, "67108865"},
		{"partial header", []byte{0, 0}, io.ErrUnexpectedEOF, "partial length"},
		{"truncated body", frame(`{"kind":"hello"}`)[:10], io.ErrUnexpectedEOF, "16 bytes announced"},
		{"not json", frame("hello world"), nil, "not a JSON object"},
		{"json but not an object", frame(`[1,2]`), nil, "not a JSON object"},
		{"printed text", []byte("Traceback (most recent call last):\n"), ErrFrameTooLarge, "larger than 64 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not mention %q", err, tc.text)
			}
		})
	}
}

func TestWriteFrameRejectsUnencodable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, map[string]any{"f": func() {}}); err == nil || buf.Len() != 0 {
		t.Fatalf("err %v, wrote %d bytes", err, buf.Len())
	}
}
