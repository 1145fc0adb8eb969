package harness

import (
	"bytes"
	"strings"
	"testing"
)

func marker(cookie string, id int) string {
	return "\n\x00astrabox-sync:" + cookie + ":" + itoa(id) + "\x00\n"
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func never() bool { return false }

func TestStreamCutsAtMarkers(t *testing.T) {
	const cookie = "c00k1e"
	input := "before one\n" + marker(cookie, 1) + "during two" + marker(cookie, 2) + "tail"
	// Feed in every chunk size, so markers straddle reads.
	for size := 1; size <= len(input); size++ {
		s := newStream("stdout", cookie, 1024, 1024)
		for i := 0; i < len(input); i += size {
			j := i + size
			if j > len(input) {
				j = len(input)
			}
			s.feed([]byte(input[i:j]))
		}
		c1, ok1 := s.take(1, never)
		c2, ok2 := s.take(2, never)
		if !ok1 || !ok2 {
			t.Fatalf("chunk %d: markers not found (%v %v)", size, ok1, ok2)
		}
		if c1.String() != "before one\n" || c2.String() != "during two" {
			t.Fatalf("chunk %d: segments %q %q", size, c1.String(), c2.String())
		}
		s.eof()
		c3, ok3 := s.take(3, never)
		if ok3 || c3.String() != "tail" {
			t.Fatalf("chunk %d: after EOF got %q found=%v", size, c3.String(), ok3)
		}
	}
}

func TestStreamKeepsLookalikes(t *testing.T) {
	const cookie = "abc"
	fake := []string{
		"\n\x00astrabox-sync:other:1\x00\n", // another cookie
		"\n\x00astrabox-sync:abc:x\x00\n",   // not a number
		"\n\x00astrabox-sync:abc:1\x00X",    // bad terminator
		"\n\x00astrabox-sync:abc:",          // cut short at EOF
	}
	for _, f := range fake {
		s := newStream("stdout", cookie, 1024, 1024)
		s.feed([]byte("a" + f))
		s.eof()
		c, found := s.take(1, never)
		if found || c.String() != "a"+f {
			t.Errorf("%q: got %q found=%v", f, c.String(), found)
		}
	}
}

func TestStreamMissingMarkerThenLate(t *testing.T) {
	const cookie = "k"
	s := newStream("stderr", cookie, 1024, 1024)
	s.feed([]byte("early"))
	stopNow := func() bool { return true }
	c, found := s.take(1, stopNow)
	if found || c.String() != "early" {
		t.Fatalf("got %q found=%v", c.String(), found)
	}
	// The late marker of call 1 is stripped and its bytes stay for call 2.
	s.feed([]byte("late" + marker(cookie, 1) + "more" + marker(cookie, 2)))
	c, found = s.take(2, never)
	if !found || c.String() != "latemore" {
		t.Fatalf("got %q found=%v", c.String(), found)
	}
}

func TestBoundedCapture(t *testing.T) {
	b := newBoundedBuf(10)
	var all bytes.Buffer
	for i := 0; i < 100; i++ {
		chunk := []byte(strings.Repeat(string(rune('a'+i%26)), i%7+1))
		all.Write(chunk)
		b.write(chunk)
	}
	c := b.capture()
	want := all.Bytes()
	if string(c.Head) != string(want[:5]) || string(c.Tail) != string(want[len(want)-5:]) {
		t.Fatalf("head %q tail %q, want %q %q", c.Head, c.Tail, want[:5], want[len(want)-5:])
	}
	if c.Len() != int64(len(want)) || c.Dropped != int64(len(want)-10) {
		t.Fatalf("len %d dropped %d, total %d", c.Len(), c.Dropped, len(want))
	}
	if s := c.String(); !strings.Contains(s, "bytes dropped]") {
		t.Fatalf("String() has no drop notice: %q", s)
	}
	small := newBoundedBuf(10)
	small.write([]byte("abcdefg"))
	if c := small.capture(); c.String() != "abcdefg" || c.Dropped != 0 {
		t.Fatalf("small capture %q", c.String())
	}
}

func TestStreamRecentAndSince(t *testing.T) {
	s := newStream("stderr", "k", 8, 6)
	s.feed([]byte("0123456789"))
	mark := s.bytesSeen()
	s.feed([]byte("ab"))
	if got, _ := s.since(mark); got != "ab" {
		t.Fatalf("since = %q", got)
	}
	if got := s.recentTail(); got != "6789ab" {
		t.Fatalf("recent = %q", got)
	}
}
