package simulate

import "encoding/json"

// The JSON-like values the platform hands a provider (the Agent configuration, callback arguments) and keeps
// in the history are copied and compared here, for simulate and for the packages above it (conformance's
// settings, its checks' comparisons).

// CopyMap returns a deep copy of a JSON-like object: nested objects and lists are copied too, so that a
// change to the copy never reaches the original. A nil map gives an empty one.
func CopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = CopyValue(v)
	}
	return out
}

// CopyValue returns a deep copy of one JSON-like value, recursing through objects and lists; null stays null
// and every other value is returned as it is.
func CopyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return CopyMap(t)
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = CopyValue(x)
		}
		return s
	default:
		return v
	}
}

// CanonicalJSON re-encodes a JSON document with sorted keys and no insignificant space, so that equal values
// compare (and hash) equal; an empty document is null, and a document that does not parse is returned as
// it is.
func CanonicalJSON(raw []byte) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	b, _ := json.Marshal(v) // encoding/json sorts map keys
	return b
}
