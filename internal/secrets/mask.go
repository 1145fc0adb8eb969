package secrets

import "encoding/json"

// MaskValue masks every string inside a JSON-like value (maps, slices, strings), returning a copy.
func (s *Set) MaskValue(v any) any {
	switch t := v.(type) {
	case string:
		return s.Mask(t)
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[s.Mask(k)] = s.MaskValue(x)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = s.MaskValue(x)
		}
		return out
	default:
		return v
	}
}

// MaskJSON masks every secret in a JSON document by decoding it, masking its strings and encoding it again;
// text that is not JSON is masked as text.
func (s *Set) MaskJSON(doc []byte) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return []byte(s.Mask(string(doc)))
	}
	out, err := json.MarshalIndent(s.MaskValue(v), "", "  ")
	if err != nil {
		return []byte(s.Mask(string(doc)))
	}
	// A secret can still hide in a form the decoder normalised (escapes): mask the text as well.
	return []byte(s.Mask(string(out)))
}
