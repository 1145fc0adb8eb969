package discovery

import (
	"fmt"
	"strings"
)

// iniOption is one option of an INI section, with its value lines as configparser joins them.
type iniOption struct {
	Name  string
	Line  int      // line of "name = ..."
	Lines []string // first-line value, then continuation lines (stripped; blank lines kept as "")
	LineN []int    // line number of each entry in Lines
}

// iniSection is one [section] of an INI file.
type iniSection struct {
	Name    string
	Line    int
	Options []*iniOption
}

// option returns the named option or nil.
func (s *iniSection) option(name string) *iniOption {
	for _, o := range s.Options {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// iniFile is a parsed INI document.
type iniFile struct {
	Sections []*iniSection
}

// section returns the named section or nil.
func (f *iniFile) section(name string) *iniSection {
	for _, s := range f.Sections {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// parseINI reads an INI document the way setuptools reads setup.cfg with Python's configparser: section and
// option names are case-sensitive, the first '=' or ':' separates an option from its value, lines whose
// first non-blank character is '#' or ';' are comments (no inline comments), and a line indented deeper
// than its option continues the value. Duplicate sections or options are errors, as in strict mode.
func parseINI(file, src string) (*iniFile, error) {
	f := &iniFile{}
	var cur *iniSection
	var opt *iniOption
	indent := 0
	seen := map[string]bool{}
	for i, raw := range strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n") {
		n := i + 1
		if n == 1 {
			raw = strings.TrimPrefix(raw, "\ufeff")
		}
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") {
			continue
		}
		if trimmed == "" {
			if opt != nil {
				opt.Lines = append(opt.Lines, "")
				opt.LineN = append(opt.LineN, n)
			}
			continue
		}
		lead := len(raw) - len(strings.TrimLeft(raw, " \t"))
		if opt != nil && lead > indent {
			opt.Lines = append(opt.Lines, trimmed)
			opt.LineN = append(opt.LineN, n)
			continue
		}
		indent = lead
		if strings.HasPrefix(trimmed, "[") && strings.Contains(trimmed[1:], "]") {
			name := trimmed[1:strings.LastIndex(trimmed, "]")]
			if f.section(name) != nil {
				return nil, &Error{File: file, Line: n, Column: lead + 1,
					Message: fmt.Sprintf("section [%s] appears twice", name),
					Hint:    "merge the two sections; setuptools refuses duplicate sections"}
			}
			cur = &iniSection{Name: name, Line: n}
			f.Sections = append(f.Sections, cur)
			opt = nil
			continue
		}
		if cur == nil {
			return nil, &Error{File: file, Line: n, Column: lead + 1,
				Message: "text before the first [section] header",
				Hint:    "start the file with a section header such as [metadata]"}
		}
		d := strings.IndexAny(trimmed, "=:")
		if d <= 0 {
			return nil, &Error{File: file, Line: n, Column: lead + 1,
				Message: fmt.Sprintf("cannot parse line %q", trimmed),
				Hint:    "write options as 'name = value'; indent continuation lines deeper than their option"}
		}
		name := strings.TrimSpace(trimmed[:d])
		if seen[cur.Name+"\x00"+name] {
			return nil, &Error{File: file, Line: n, Column: lead + 1,
				Message: fmt.Sprintf("option %q appears twice in section [%s]", name, cur.Name),
				Hint:    "keep one; setuptools refuses duplicate options"}
		}
		seen[cur.Name+"\x00"+name] = true
		opt = &iniOption{Name: name, Line: n,
			Lines: []string{strings.TrimSpace(trimmed[d+1:])}, LineN: []int{n}}
		cur.Options = append(cur.Options, opt)
	}
	return f, nil
}

// listItems splits an option value the way setuptools' _parse_list does: by lines when the value spans
// several lines, else by commas; blank items are dropped. It returns each item with its line.
func (o *iniOption) listItems() ([]string, []int) {
	var items []string
	var lines []int
	multi := false
	for _, l := range o.Lines[1:] {
		if l != "" {
			multi = true
		}
	}
	if !multi {
		for _, it := range strings.Split(o.Lines[0], ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
				lines = append(lines, o.Line)
			}
		}
		return items, lines
	}
	for i, l := range o.Lines {
		if l != "" {
			items = append(items, l)
			lines = append(lines, o.LineN[i])
		}
	}
	return items, lines
}
