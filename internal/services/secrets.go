package services

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// maxSecretDepth bounds the walk over a response body.
const maxSecretDepth = 64

// ResponseSecrets returns the string values in a JSON response body that the service's SecretFields name: a
// field name matches an object key anywhere in the document (case-insensitive), a JSON pointer ("/data/token")
// one place. A secret value that is itself a JSON document (AWS Secrets Manager's SecretString usually is,
// {"api_key": "..."}) holds secrets too: every string leaf of it is one, since a provider reads and leaks
// those rather than the whole document. Values shorter than 6 characters are left out (too short to hunt
// without false findings). A body that is not JSON has no secrets. The result is sorted and without
// duplicates.
func ResponseSecrets(body []byte, fields []string) []string {
	var doc any
	if len(body) == 0 || json.Unmarshal(body, &doc) != nil {
		return nil
	}
	names := map[string]bool{}
	found := map[string]bool{}
	for _, f := range fields {
		if strings.HasPrefix(f, "/") {
			if v, ok := pointer(doc, f); ok {
				addSecret(found, v)
			}
			continue
		}
		names[strings.ToLower(f)] = true
	}
	walkSecrets(doc, names, found, 0)
	out := make([]string, 0, len(found))
	for s := range found {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func addSecret(found map[string]bool, v any) {
	addSecretAt(found, v, 0)
}

// addSecretAt adds v, and the string leaves of a JSON document v holds (to a bound depth).
func addSecretAt(found map[string]bool, v any, depth int) {
	s, ok := v.(string)
	if !ok || len(s) < 6 {
		return
	}
	found[s] = true
	t := strings.TrimSpace(s)
	if depth >= 2 || len(t) < 2 || (t[0] != '{' && t[0] != '[') {
		return
	}
	var inner any
	if json.Unmarshal([]byte(t), &inner) == nil {
		leaves(inner, func(x string) { addSecretAt(found, x, depth+1) }, 0)
	}
}

// leaves calls fn with every string value in a JSON document.
func leaves(v any, fn func(string), depth int) {
	if depth > maxSecretDepth {
		return
	}
	switch t := v.(type) {
	case string:
		fn(t)
	case map[string]any:
		for _, x := range t {
			leaves(x, fn, depth+1)
		}
	case []any:
		for _, x := range t {
			leaves(x, fn, depth+1)
		}
	}
}

func walkSecrets(v any, names, found map[string]bool, depth int) {
	if depth > maxSecretDepth {
		return
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if names[strings.ToLower(k)] {
				addSecret(found, x)
			}
			walkSecrets(x, names, found, depth+1)
		}
	case []any:
		for _, x := range t {
			walkSecrets(x, names, found, depth+1)
		}
	}
}

// pointer resolves an RFC 6901 JSON pointer.
func pointer(doc any, p string) (any, bool) {
	cur := doc
	for _, raw := range strings.Split(p, "/")[1:] {
		tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		switch t := cur.(type) {
		case map[string]any:
			v, ok := t[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil, false
			}
			cur = t[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
