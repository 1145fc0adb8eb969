package harness

import (
	"bytes"
	"strconv"
	"sync"
)

// Capture is the output of one stream during one call: the first and last
// bytes (each at most half of Limits.CaptureBytes) and the number of bytes
// dropped between them.
type Capture struct {
	Head, Tail []byte
	Dropped    int64
}

// Bytes returns head and tail joined; when bytes were dropped a one-line
// notice sits between them.
func (c Capture) Bytes() []byte {
	var b bytes.Buffer
	b.Write(c.Head)
	if c.Dropped > 0 {
		b.WriteString("\n[astrabox: " + strconv.FormatInt(c.Dropped, 10) + " bytes dropped]\n")
	}
	b.Write(c.Tail)
	return b.Bytes()
}

// String returns Bytes as a string.
func (c Capture) String() string { return string(c.Bytes()) }

// Len is the number of bytes the stream produced (kept and dropped).
func (c Capture) Len() int64 { return int64(len(c.Head)+len(c.Tail)) + c.Dropped }

// boundedBuf keeps a head and a ring tail of bounded size.
type boundedBuf struct {
	half    int // tail capacity
	headCap int
	head    []byte
	tail    []byte // ring of at most half bytes
	start   int    // ring start when full
	dropped int64
}

func newBoundedBuf(total int) *boundedBuf {
	half := total / 2
	if half < 1 {
		half = 1
	}
	return &boundedBuf{half: half, headCap: half}
}

// newTailBuf keeps only the last n bytes.
func newTailBuf(n int) *boundedBuf { return &boundedBuf{half: n} }

func (b *boundedBuf) write(p []byte) {
	if n := b.headCap - len(b.head); n > 0 {
		if n > len(p) {
			n = len(p)
		}
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	if len(p) >= b.half {
		b.dropped += int64(len(b.tail)) + int64(len(p)-b.half)
		b.tail = append(b.tail[:0], p[len(p)-b.half:]...)
		b.start = 0
		return
	}
	for len(p) > 0 {
		if len(b.tail) < b.half {
			n := b.half - len(b.tail)
			if n > len(p) {
				n = len(p)
			}
			b.tail = append(b.tail, p[:n]...)
			p = p[n:]
			continue
		}
		n := copy(b.tail[b.start:], p)
		if m := b.half - b.start; n > m {
			n = m
		}
		b.dropped += int64(n)
		b.start = (b.start + n) % b.half
		p = p[n:]
	}
}

func (b *boundedBuf) capture() Capture {
	c := Capture{Head: append([]byte(nil), b.head...), Dropped: b.dropped}
	if len(b.tail) > 0 {
		c.Tail = make([]byte, 0, len(b.tail))
		c.Tail = append(c.Tail, b.tail[b.start:]...)
		c.Tail = append(c.Tail, b.tail[:b.start]...)
	}
	return c
}

// stream drains one output descriptor, cutting it into per-call segments at
// the sync markers "\n\x00astrabox-sync:<cookie>:<id>\x00\n".
type stream struct {
	name   string
	prefix []byte
	limit  int

	mu     sync.Mutex
	cond   *sync.Cond
	cur    *boundedBuf
	pend   []byte            // bytes that may start a marker
	done   map[int64]Capture // segments cut at a marker, by call id
	taken  int64             // highest id whose segment was handed out
	closed bool              // EOF seen
	total  int64             // bytes of provider output seen (markers excluded)
	recent *boundedBuf       // rolling tail of everything, for error reports
}

func newStream(name, cookie string, limit, recent int) *stream {
	s := &stream{
		name:   name,
		prefix: []byte("\n\x00astrabox-sync:" + cookie + ":"),
		limit:  limit,
		cur:    newBoundedBuf(limit),
		done:   map[int64]Capture{},
		recent: newTailBuf(recent),
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// maxMarkerDigits is the longest call id accepted in a marker.
const maxMarkerDigits = 19

// feed processes a chunk read from the descriptor.
func (s *stream) feed(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data := p
	if len(s.pend) > 0 {
		data = append(s.pend, p...)
		s.pend = nil
	}
	for len(data) > 0 {
		i := bytes.Index(data, s.prefix)
		if i < 0 {
			// Keep the longest suffix that could begin the prefix.
			k := partialSuffix(data, s.prefix)
			s.emit(data[:len(data)-k])
			if k > 0 {
				s.pend = append([]byte(nil), data[len(data)-k:]...)
			}
			return
		}
		s.emit(data[:i])
		rest := data[i+len(s.prefix):]
		j := 0
		for j < len(rest) && j <= maxMarkerDigits && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		incomplete := (j == len(rest) && j <= maxMarkerDigits) ||
			(j > 0 && j+1 == len(rest) && rest[j] == 0)
		if incomplete {
			s.pend = append([]byte(nil), data[i:]...)
			return
		}
		if j > 0 && j <= maxMarkerDigits && j+1 < len(rest) && rest[j] == 0 && rest[j+1] == '\n' {
			if id, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
				s.cut(id)
				data = rest[j+2:]
				continue
			}
		}
		// Not a marker after all: the prefix bytes are output.
		s.emit(data[i : i+len(s.prefix)])
		data = rest
	}
}

func partialSuffix(data, prefix []byte) int {
	max := len(prefix) - 1
	if max > len(data) {
		max = len(data)
	}
	for k := max; k > 0; k-- {
		if bytes.Equal(data[len(data)-k:], prefix[:k]) {
			return k
		}
	}
	return 0
}

func (s *stream) emit(p []byte) {
	if len(p) == 0 {
		return
	}
	s.cur.write(p)
	s.recent.write(p)
	s.total += int64(len(p))
	s.cond.Broadcast()
}

// cut ends the current segment at the marker of call id.
func (s *stream) cut(id int64) {
	if id <= s.taken {
		// The waiter already gave up on this marker; the bytes stay with the
		// next call.
		return
	}
	s.done[id] = s.cur.capture()
	s.cur = newBoundedBuf(s.limit)
	s.cond.Broadcast()
}

// eof records the end of the stream, flushing a pending partial marker as
// output.
func (s *stream) eof() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pend) > 0 {
		s.emit(s.pend)
		s.pend = nil
	}
	s.closed = true
	s.cond.Broadcast()
}

// take returns the segment of call id. found is false when the marker did
// not arrive before the wait ended (wait returns true to stop waiting); the
// current segment is then handed out instead.
func (s *stream) take(id int64, stop func() bool) (c Capture, found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if c, ok := s.done[id]; ok {
			delete(s.done, id)
			s.taken = id
			return c, true
		}
		if s.closed || stop() {
			break
		}
		s.cond.Wait()
	}
	if len(s.pend) > 0 && s.closed {
		s.emit(s.pend)
		s.pend = nil
	}
	c = s.cur.capture()
	s.cur = newBoundedBuf(s.limit)
	s.taken = id
	for k := range s.done {
		if k <= id {
			delete(s.done, k)
		}
	}
	return c, false
}

// wake wakes waiters so they re-check their stop condition.
func (s *stream) wake() {
	s.mu.Lock()
	s.cond.Broadcast()
	s.mu.Unlock()
}

// recentTail returns the last bytes of the stream (all calls).
func (s *stream) recentTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.recent.capture()
	return string(append(c.Head, c.Tail...))
}

// since returns the bytes emitted after offset total0, if they are still in
// the rolling tail, and the current total.
func (s *stream) since(total0 int64) (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.recent.capture()
	all := append(c.Head, c.Tail...)
	n := s.total - total0
	if n <= 0 {
		return "", s.total
	}
	if n > int64(len(all)) {
		n = int64(len(all))
	}
	return string(all[int64(len(all))-n:]), s.total
}

func (s *stream) bytesSeen() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}
