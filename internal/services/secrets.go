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
// one place. Values shorter than 6 characters are left out (too short to hunt without false findings). A
// body that is not JSON has no secrets. The result is sorted and without duplicates.
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
	if s, ok := v.(string); ok && len(s) >= 6 {
		found[s] = true
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
