package discovery

import (
	"fmt"
	"strings"
	"unicode"
)

// ObjectRef is a parsed entry-point object reference, "module.sub:attr.attr [extra1, extra2]".
type ObjectRef struct {
	// Module is the dotted module path.
	Module string
	// Attr is the dotted attribute path inside the module; "" when the reference names a module.
	Attr string
	// Extras are the optional extras in square brackets.
	Extras []string
}

// String renders the reference in its canonical form, "module:attr [e1,e2]".
func (r ObjectRef) String() string {
	s := r.Module
	if r.Attr != "" {
		s += ":" + r.Attr
	}
	if len(r.Extras) > 0 {
		s += " [" + strings.Join(r.Extras, ",") + "]"
	}
	return s
}

// Target is "module:attr" without extras.
func (r ObjectRef) Target() string {
	if r.Attr == "" {
		return r.Module
	}
	return r.Module + ":" + r.Attr
}

// Equal reports whether two references name the same object with the same extras.
func (r ObjectRef) Equal(o ObjectRef) bool {
	if r.Module != o.Module || r.Attr != o.Attr || len(r.Extras) != len(o.Extras) {
		return false
	}
	for i := range r.Extras {
		if r.Extras[i] != o.Extras[i] {
			return false
		}
	}
	return true
}

// ParseObjectRef parses an entry-point object reference as the packaging specification defines it: a dotted
// module path, optionally ":" and a dotted attribute path, optionally extras in square brackets, with spaces
// accepted around the colon, before and inside the brackets, and after them.
func ParseObjectRef(s string) (ObjectRef, error) {
	var r ObjectRef
	rest := strings.TrimSpace(s)
	if rest == "" {
		return r, fmt.Errorf("empty object reference")
	}
	if i := strings.IndexByte(rest, '['); i >= 0 {
		ex := strings.TrimSpace(rest[i:])
		rest = strings.TrimSpace(rest[:i])
		if !strings.HasSuffix(ex, "]") || strings.Count(ex, "[") != 1 || strings.Count(ex, "]") != 1 {
			return r, fmt.Errorf("object reference %q: extras must be one bracketed list at the end, like [extra1, extra2]", s)
		}
		inner := strings.TrimSpace(ex[1 : len(ex)-1])
		if inner != "" {
			for _, e := range strings.Split(inner, ",") {
				e = strings.TrimSpace(e)
				if !validExtra(e) {
					return r, fmt.Errorf("object reference %q: invalid extra name %q", s, e)
				}
				r.Extras = append(r.Extras, e)
			}
		}
	} else if strings.IndexByte(rest, ']') >= 0 {
		return r, fmt.Errorf("object reference %q: unbalanced ']'", s)
	}
	mod, attr, hasColon := strings.Cut(rest, ":")
	mod, attr = strings.TrimSpace(mod), strings.TrimSpace(attr)
	if err := checkDotted(mod); err != nil {
		return r, fmt.Errorf("object reference %q: module %w", s, err)
	}
	if hasColon {
		if err := checkDotted(attr); err != nil {
			return r, fmt.Errorf("object reference %q: attribute %w", s, err)
		}
	}
	r.Module, r.Attr = mod, attr
	return r, nil
}

// checkDotted validates a dotted path of Python identifiers.
func checkDotted(s string) error {
	if s == "" {
		return fmt.Errorf("is missing")
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return fmt.Errorf("%q has an empty part (stray dot)", s)
		}
		for i, c := range part {
			ok := c == '_' || unicode.IsLetter(c) || (i > 0 && unicode.IsDigit(c))
			if !ok {
				return fmt.Errorf("%q is not a dotted path of Python identifiers (bad character %q)", s, c)
			}
		}
	}
	return nil
}

// validExtra reports whether e is a plausible extra name (letters, digits, '.', '_', '-').
func validExtra(e string) bool {
	if e == "" {
		return false
	}
	for _, c := range e {
		if !(c == '.' || c == '_' || c == '-' || c < 128 && (unicode.IsLetter(c) || unicode.IsDigit(c))) {
			return false
		}
	}
	return true
}
