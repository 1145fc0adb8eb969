package conntag

import (
	"bytes"
	"strconv"
	"sync"
)

// framer finds where each HTTP/1.1 request starts in the plaintext byte stream of one connection, by
// following the framing the server itself follows (a header block ended by an empty line, then a
// Content-Length body or chunked body). The harness reports which call's code sent each run of bytes of
// the connection (harness.Send); the start offset of a request says whose send carried its first byte.
// The framer stops for good at a CONNECT (what follows is a tunnel), at an unparsable length or at an
// over-long line: later requests then have no known start.
type framer struct {
	mu     sync.Mutex
	off    int64   // plaintext bytes seen so far
	starts []int64 // the start offset of each request seen, in order
	st     frameState
	line   []byte // the header or chunk line being read
	first  bool   // the line being read is the request line
	left   int64  // body or chunk bytes still to skip
	method string
	length int64
	chunk  bool
	tunnel int64 // the offset after a CONNECT request's header block, where its tunnel starts (-1: none)
}

// newFramer follows a stream whose first byte has offset from; a negative from is a stream whose offsets
// are unknown (nothing is framed).
func newFramer(from int64) *framer {
	if from < 0 {
		return &framer{st: frameDone, tunnel: -1}
	}
	return &framer{off: from, tunnel: -1}
}

type frameState uint8

const (
	frameIdle      frameState = iota // between requests
	frameHeader                      // in the request line or a header line
	frameBody                        // in a Content-Length body
	frameChunkSize                   // in a chunk-size line
	frameChunkData                   // in a chunk's data
	frameChunkEnd                    // in the CRLF after a chunk's data
	frameTrailer                     // in the trailer of a chunked body
	frameDone                        // a tunnel, or framing the kit cannot follow
)

// maxLine bounds a header or chunk line the framer keeps (net/http's own header limit is 1 MB in all).
const maxLine = 1 << 20

// feed follows the framing over the next bytes of the stream.
func (f *framer) feed(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(p) > 0 && f.st != frameDone {
		n := f.step(p)
		f.off += int64(n)
		p = p[n:]
		if f.st == frameDone && f.method == "CONNECT" && f.tunnel < 0 {
			f.tunnel = f.off
		}
	}
	f.off += int64(len(p))
}

// step consumes a prefix of p (at least one byte) in the current state and returns its length.
func (f *framer) step(p []byte) int {
	switch f.st {
	case frameIdle:
		if p[0] == '\r' || p[0] == '\n' {
			return 1
		}
		f.starts = append(f.starts, f.off)
		f.st, f.first, f.method, f.length, f.chunk = frameHeader, true, "", 0, false
		return f.readLine(p)
	case frameBody, frameChunkData:
		n := int64(len(p))
		if n > f.left {
			n = f.left
		}
		f.left -= n
		if f.left == 0 {
			if f.st == frameBody {
				f.st = frameIdle
			} else {
				f.st = frameChunkEnd
			}
		}
		return int(n)
	default:
		return f.readLine(p)
	}
}

// readLine adds bytes to the current line up to and including its '\n', and handles a complete line (read
// in place when it lies within p, as most do).
func (f *framer) readLine(p []byte) int {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		f.line = append(f.line, p...)
		if len(f.line) > maxLine {
			f.st = frameDone
		}
		return len(p)
	}
	line := p[:i]
	if len(f.line) > 0 {
		f.line = append(f.line, line...)
		line = f.line
	}
	f.endLine(bytes.TrimSuffix(line, []byte{'\r'}))
	f.line = f.line[:0]
	return i + 1
}

// endLine moves the framing on after one complete line.
func (f *framer) endLine(line []byte) {
	switch f.st {
	case frameHeader:
		f.headerLine(line)
	case frameChunkSize:
		hex, _, _ := bytes.Cut(line, []byte{';'})
		size, err := strconv.ParseInt(string(bytes.TrimSpace(hex)), 16, 64)
		switch {
		case err != nil || size < 0:
			f.st = frameDone
		case size == 0:
			f.st = frameTrailer
		default:
			f.st, f.left = frameChunkData, size
		}
	case frameChunkEnd:
		f.st = frameChunkSize
	case frameTrailer:
		if len(line) == 0 {
			f.st = frameIdle
		}
	}
}

var (
	contentLength    = []byte("content-length")
	transferEncoding = []byte("transfer-encoding")
	chunked          = []byte("chunked")
)

// headerLine reads the request line or one header line; an empty one ends the header block.
func (f *framer) headerLine(line []byte) {
	if f.first {
		f.first = false
		method, _, _ := bytes.Cut(line, []byte{' '})
		f.method = string(method)
		return
	}
	if len(line) > 0 {
		name, value, _ := bytes.Cut(line, []byte{':'})
		name, value = bytes.TrimSpace(name), bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, contentLength):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				f.st = frameDone
				return
			}
			f.length = n
		case bytes.EqualFold(name, transferEncoding):
			f.chunk = bytes.Contains(bytes.ToLower(value), chunked)
		}
		return
	}
	switch {
	case f.method == "CONNECT":
		f.st = frameDone
	case f.chunk:
		f.st = frameChunkSize
	case f.length > 0:
		f.st, f.left = frameBody, f.length
	default:
		f.st = frameIdle
	}
}

// start is the offset of the i-th request (from 0) of the stream, when the framer saw it.
func (f *framer) start(i int) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < 0 || i >= len(f.starts) {
		return 0, false
	}
	return f.starts[i], true
}

// tunnelAt is the offset where the tunnel a CONNECT opened starts.
func (f *framer) tunnelAt() (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tunnel, f.tunnel >= 0
}
