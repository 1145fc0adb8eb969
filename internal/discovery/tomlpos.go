package discovery

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// maxSettingsScan bounds how much of a settings file SettingsLine reads.
const maxSettingsScan = 4 << 20

// SettingsLine returns the line of file on which a settings key ("deadlines.turn") is written: under
// [tool.astrabox] in pyproject.toml or at the top of astrabox.toml, the line of the key itself, else of its
// innermost enclosing table or key that is written (a table header, a dotted key, an inline table). 0 when
// the file cannot be read or no part of the key is found. The TOML decoder has already accepted the file.
func SettingsLine(file, key string) int {
	if file == "" || key == "" {
		return 0
	}
	st, err := os.Stat(file)
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxSettingsScan))
	if err != nil {
		return 0
	}
	path := []string{"tool", "astrabox"}
	if filepath.Base(file) == "astrabox.toml" {
		path = nil
	}
	lines := keyLines(string(src))
	want := strings.Split(key, ".")
	for d := len(want); d >= 1; d-- {
		if line, ok := lines[pathKey(append(path[:len(path):len(path)], want[:d]...)...)]; ok {
			return line
		}
	}
	return 0
}

// keyLines maps every key path defined in a TOML document (tables, dotted keys, keys inside inline tables)
// to the 1-based line where it is first written. BurntSushi/toml validates the document and gives the
// values; it keeps key positions private, so this small scanner recovers them. It assumes a document that
// already parsed and stops quietly at anything it does not understand.
func keyLines(src string) map[string]int {
	s := &tomlScanner{src: src, line: 1, out: map[string]int{}}
	s.document()
	return s.out
}

// pathKey joins key parts into a map key for keyLines.
func pathKey(parts ...string) string { return strings.Join(parts, "\x00") }

type tokKind int

const (
	tEOF tokKind = iota
	tNewline
	tBare   // unquoted run: bare key, number, boolean, date
	tString // quoted string, decoded
	tPunct  // one of [ ] { } = ,
)

type token struct {
	kind tokKind
	text string
	line int
}

type tomlScanner struct {
	src    string
	pos    int
	line   int
	peeked *token
	out    map[string]int
}

// record notes the line of path and of every prefix of it not seen before. Every recorded path has its
// prefixes recorded too, so the walk goes from the longest prefix down and stops at the first one known:
// keys under one long table header cost one join each, not one per prefix.
func (s *tomlScanner) record(path []string, line int) {
	for i := len(path); i >= 1; i-- {
		k := pathKey(path[:i]...)
		if _, ok := s.out[k]; ok {
			return
		}
		s.out[k] = line
	}
}

func (s *tomlScanner) peek() token {
	if s.peeked == nil {
		t := s.lex()
		s.peeked = &t
	}
	return *s.peeked
}

func (s *tomlScanner) next() token {
	t := s.peek()
	s.peeked = nil
	return t
}

func (s *tomlScanner) lex() token {
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			s.pos++
		case c == '#':
			for s.pos < len(s.src) && s.src[s.pos] != '\n' {
				s.pos++
			}
		case c == '\n':
			s.pos++
			s.line++
			return token{tNewline, "\n", s.line - 1}
		case strings.IndexByte("[]{}=,", c) >= 0:
			s.pos++
			return token{tPunct, string(c), s.line}
		case c == '"' || c == '\'':
			return s.lexString(c)
		default:
			start, line := s.pos, s.line
			for s.pos < len(s.src) && strings.IndexByte(" \t\r\n#[]{}=,\"'", s.src[s.pos]) < 0 {
				s.pos++
			}
			return token{tBare, s.src[start:s.pos], line}
		}
	}
	return token{tEOF, "", s.line}
}

func (s *tomlScanner) lexString(q byte) token {
	line := s.line
	triple := strings.Repeat(string(q), 3)
	if strings.HasPrefix(s.src[s.pos:], triple) {
		s.pos += 3
		end := strings.Index(s.src[s.pos:], triple)
		if end < 0 {
			end = len(s.src) - s.pos
		}
		// Up to two more quotes may belong to the content ("""a"""" ends with a quote).
		for end+3 < len(s.src)-s.pos && s.src[s.pos+end+3] == q {
			end++
		}
		body := s.src[s.pos : s.pos+end]
		s.line += strings.Count(body, "\n")
		s.pos += end + 3
		if s.pos > len(s.src) {
			s.pos = len(s.src)
		}
		return token{tString, body, line}
	}
	s.pos++
	var b strings.Builder
	for s.pos < len(s.src) && s.src[s.pos] != q && s.src[s.pos] != '\n' {
		c := s.src[s.pos]
		if q == '"' && c == '\\' && s.pos+1 < len(s.src) {
			s.pos++
			s.unescape(&b)
			continue
		}
		b.WriteByte(c)
		s.pos++
	}
	if s.pos < len(s.src) && s.src[s.pos] == q {
		s.pos++
	}
	return token{tString, b.String(), line}
}

// unescape decodes one escape sequence after a backslash (s.pos at the escaped character).
func (s *tomlScanner) unescape(b *strings.Builder) {
	c := s.src[s.pos]
	s.pos++
	simple := map[byte]string{'b': "\b", 't': "\t", 'n': "\n", 'f': "\f", 'r': "\r", 'e': "\x1b", '"': "\"", '\\': "\\"}
	if r, ok := simple[c]; ok {
		b.WriteString(r)
		return
	}
	n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	if n > 0 && s.pos+n <= len(s.src) {
		if v, err := strconv.ParseUint(s.src[s.pos:s.pos+n], 16, 32); err == nil {
			b.WriteRune(rune(v))
			s.pos += n
			return
		}
	}
	b.WriteByte('\\')
	b.WriteByte(c)
}

func (s *tomlScanner) document() {
	var table []string
	for {
		t := s.peek()
		switch {
		case t.kind == tEOF:
			return
		case t.kind == tNewline:
			s.next()
		case t.kind == tPunct && t.text == "[":
			s.next()
			array := false
			if p := s.peek(); p.kind == tPunct && p.text == "[" {
				s.next()
				array = true
			}
			key, ok := s.key("]")
			if !ok {
				return
			}
			s.next() // ]
			if array {
				s.next() // second ]
			}
			table = key
			s.record(table, t.line)
		case t.kind == tBare || t.kind == tString:
			if !s.keyValue(table, "=") {
				return
			}
		default:
			return
		}
	}
}

// key reads a dotted key up to (not including) the punctuation stop.
func (s *tomlScanner) key(stop string) ([]string, bool) {
	var parts []string
	for {
		t := s.peek()
		switch t.kind {
		case tBare:
			s.next()
			for _, p := range strings.Split(t.text, ".") {
				if p != "" {
					parts = append(parts, p)
				}
			}
		case tString:
			s.next()
			parts = append(parts, t.text)
		case tPunct:
			if t.text == stop {
				return parts, len(parts) > 0
			}
			return nil, false
		default:
			return nil, false
		}
	}
}

// keyValue reads "key = value" relative to prefix and records the key's line.
func (s *tomlScanner) keyValue(prefix []string, _ string) bool {
	line := s.peek().line
	key, ok := s.key("=")
	if !ok {
		return false
	}
	s.next() // =
	full := append(append([]string{}, prefix...), key...)
	s.record(full, line)
	return s.value(full)
}

func (s *tomlScanner) value(path []string) bool {
	t := s.next()
	switch {
	case t.kind == tString || t.kind == tBare:
		return true
	case t.kind == tPunct && t.text == "{":
		for {
			p := s.peek()
			switch {
			case p.kind == tNewline || p.kind == tPunct && p.text == ",":
				s.next()
			case p.kind == tPunct && p.text == "}":
				s.next()
				return true
			case p.kind == tBare || p.kind == tString:
				if !s.keyValue(path, "=") {
					return false
				}
			default:
				return false
			}
		}
	case t.kind == tPunct && t.text == "[":
		depth := 1
		for depth > 0 {
			p := s.next()
			switch {
			case p.kind == tEOF:
				return false
			case p.kind == tPunct && (p.text == "[" || p.text == "{"):
				depth++
			case p.kind == tPunct && (p.text == "]" || p.text == "}"):
				depth--
			}
		}
		return true
	}
	return false
}
