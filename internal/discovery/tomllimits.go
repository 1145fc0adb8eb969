package discovery

import (
	"fmt"
	"strings"
)

// checkTOMLShape is a cheap linear pre-scan of a TOML document that refuses, with file and line, nesting of
// arrays and inline tables deeper than MaxTOMLNesting and key paths longer than MaxTOMLKeyParts. The TOML
// decoder's key handling grows with the square of both (10,000 nested inline tables or a 20,000-part table
// header in 40 KB exhaust the machine's memory), so such input must not reach it. The scan knows strings and
// comments; anything else it passes over and leaves for the decoder to judge.
func checkTOMLShape(path, src string) error {
	sc := shapeScanner{src: src, line: 1, atKey: true}
	for sc.pos < len(src) {
		if err := sc.step(); err != nil {
			return &Error{File: path, Line: sc.line, Message: err.Error(),
				Hint: "this is far beyond any real project file; check that this is the file you meant"}
		}
	}
	return nil
}

// shapeScanner holds the pre-scan's state.
type shapeScanner struct {
	src  string
	pos  int
	line int
	// stack holds '[' or '{' for each open array or inline table; parts holds, for each open inline table,
	// the key-path length at which it was opened.
	stack []byte
	parts []int
	// header is the current table header's part count; key counts the dotted parts of the key being read.
	header int
	key    int
	atKey  bool
	// entries counts table headers and key/value pairs, and pathParts the parts of their full paths.
	entries, pathParts int
}

// entry counts one table header or key/value pair whose full path has n parts.
func (s *shapeScanner) entry(n int) error {
	s.entries++
	s.pathParts += n
	if s.entries > MaxTOMLEntries {
		return fmt.Errorf("more than %d tables and keys, more than astrabox accepts", MaxTOMLEntries)
	}
	if s.pathParts > MaxTOMLPathParts {
		return fmt.Errorf("tables and keys whose paths have more than %d parts in all, more than astrabox accepts", MaxTOMLPathParts)
	}
	return nil
}

func (s *shapeScanner) base() int {
	if n := len(s.parts); n > 0 {
		return s.parts[n-1]
	}
	return s.header
}

func (s *shapeScanner) startKey() { s.atKey, s.key = true, 1 }

func (s *shapeScanner) step() error {
	c := s.src[s.pos]
	switch c {
	case '#':
		for s.pos < len(s.src) && s.src[s.pos] != '\n' {
			s.pos++
		}
		return nil
	case '\n':
		s.line++
		if len(s.stack) == 0 {
			s.startKey()
		}
	case '"', '\'':
		s.skipString(c)
		return nil
	case '[':
		if len(s.stack) == 0 && s.atKey {
			return s.tableHeader()
		}
		return s.open('[')
	case '{':
		return s.open('{')
	case ']', '}':
		if n := len(s.stack); n > 0 {
			if s.stack[n-1] == '{' {
				s.parts = s.parts[:len(s.parts)-1]
			}
			s.stack = s.stack[:n-1]
		}
		s.atKey = false
	case ',':
		if n := len(s.stack); n > 0 && s.stack[n-1] == '{' {
			s.startKey()
		}
	case '=':
		if s.atKey {
			s.atKey = false
			if s.base()+s.key > MaxTOMLKeyParts {
				return fmt.Errorf("a key path of %d parts is longer than the %d astrabox accepts", s.base()+s.key, MaxTOMLKeyParts)
			}
			if err := s.entry(s.base() + s.key); err != nil {
				return err
			}
		}
	case '.':
		if s.atKey {
			s.key++
			if s.base()+s.key > MaxTOMLKeyParts {
				return fmt.Errorf("a key path of more than %d parts is longer than astrabox accepts", MaxTOMLKeyParts)
			}
		}
	}
	s.pos++
	return nil
}

// open enters an array or an inline table.
func (s *shapeScanner) open(kind byte) error {
	if len(s.stack) >= MaxTOMLNesting {
		return fmt.Errorf("arrays and inline tables nest more than %d deep, deeper than astrabox accepts", MaxTOMLNesting)
	}
	if kind == '{' {
		// The keys inside extend the path of the key this table is the value of.
		s.parts = append(s.parts, s.base()+s.key)
		s.stack = append(s.stack, kind)
		s.pos++
		s.startKey()
		return nil
	}
	s.stack = append(s.stack, kind)
	s.atKey = false
	s.pos++
	return nil
}

// tableHeader reads "[a.b]" or "[[a.b]]" and records its part count.
func (s *shapeScanner) tableHeader() error {
	s.pos++
	if s.pos < len(s.src) && s.src[s.pos] == '[' {
		s.pos++
	}
	n := 1
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == '"' || c == '\'':
			s.skipString(c)
			continue
		case c == '.':
			n++
			if n > MaxTOMLKeyParts {
				return fmt.Errorf("a table header of more than %d dotted parts is longer than astrabox accepts", MaxTOMLKeyParts)
			}
		case c == ']' || c == '\n':
			s.header, s.atKey = n, false
			return s.entry(n)
		}
		s.pos++
	}
	return nil
}

// skipString passes over a basic or literal string, one-line or multi-line, counting its newlines.
func (s *shapeScanner) skipString(q byte) {
	triple := strings.Repeat(string(q), 3)
	if strings.HasPrefix(s.src[s.pos:], triple) {
		s.pos += 3
		for s.pos < len(s.src) {
			switch {
			case q == '"' && s.src[s.pos] == '\\':
				s.pos++
				if s.pos < len(s.src) && s.src[s.pos] == '\n' {
					s.line++
				}
			case strings.HasPrefix(s.src[s.pos:], triple):
				s.pos += 3
				for s.pos < len(s.src) && s.src[s.pos] == q {
					s.pos++
				}
				return
			case s.src[s.pos] == '\n':
				s.line++
			}
			s.pos++
		}
		return
	}
	s.pos++
	for s.pos < len(s.src) && s.src[s.pos] != '\n' {
		switch s.src[s.pos] {
		case '\\':
			if q == '"' && s.pos+1 < len(s.src) && s.src[s.pos+1] != '\n' {
				s.pos++
			}
		case q:
			s.pos++
			return
		}
		s.pos++
	}
}
