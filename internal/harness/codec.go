package harness

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
