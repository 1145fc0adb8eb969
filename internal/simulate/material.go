package simulate

import (
	"bytes"
	"hash/maphash"
	"sync"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// A provider that returns the same large file from every call (a bundle, a model cache) would otherwise keep
// one copy per call in the history, one per delivery in the sandboxes and more in the checks: tens of copies
// of a file of megabytes. Material is instead held once per distinct content per scenario: each decoded file
// is looked up by a hash of its bytes, and an equal one seen before is shared. Material bytes are never
// changed once decoded (sandboxes replace a file on write, and hand out copies on read).

// materials interns the contents of one scenario's material files.
type materials struct {
	mu   sync.Mutex
	seed maphash.Seed
	byH  map[uint64][][]byte
}

// intern returns content, or an equal slice seen before.
func (m *materials) intern(content []byte) []byte {
	if len(content) < internMin {
		return content
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byH == nil {
		m.byH, m.seed = map[uint64][][]byte{}, maphash.MakeSeed()
	}
	h := maphash.Bytes(m.seed, content)
	for _, c := range m.byH[h] {
		if bytes.Equal(c, content) {
			return c
		}
	}
	m.byH[h] = append(m.byH[h], content)
	return content
}

// internMin is the smallest content worth interning (smaller files cost less than their lookup).
const internMin = 4 << 10

// internFiles shares the content of every file of a result with equal content seen before in the scenario.
func (m *materials) internFiles(r *harness.Result) {
	if r == nil {
		return
	}
	for i := range r.Files {
		r.Files[i].Content = m.intern(r.Files[i].Content)
	}
}
