package secrets

import "encoding/json"

// MaskJSON masks every secret in a JSON document by decoding it, masking its strings (Masked) and encoding it
// again; text that is not JSON, or whose keys mask to the same text, is masked as text.
func (s *Set) MaskJSON(doc []byte) []byte {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return []byte(s.Mask(string(doc)))
	}
	m, err := Masked(s, v)
	if err != nil {
		return []byte(s.Mask(string(doc)))
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return []byte(s.Mask(string(doc)))
	}
	// A secret can still hide in a form the decoder normalised (escapes): mask the text as well.
	return []byte(s.Mask(string(out)))
}
