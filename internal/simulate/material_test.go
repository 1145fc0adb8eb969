package simulate

import (
	"bytes"
	"testing"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// TestMaterialIsHeldOncePerContent (issue 25.4): the same large file returned by several calls is one slice in
// the scenario, and delivering it into a sandbox does not copy it; different content stays apart.
func TestMaterialIsHeldOncePerContent(t *testing.T) {
	var m materials
	big := func(b byte) []byte { return bytes.Repeat([]byte{b}, 64<<10) }
	r1 := &harness.Result{Files: []harness.MaterialFile{{Name: "bundle.bin", Content: big('a')}}}
	r2 := &harness.Result{Files: []harness.MaterialFile{{Name: "bundle.bin", Content: big('a')}, {Name: "other.bin", Content: big('b')}}}
	m.internFiles(r1)
	m.internFiles(r2)
	same := func(a, b []byte) bool { return len(a) > 0 && &a[0] == &b[0] }
	if !same(r1.Files[0].Content, r2.Files[0].Content) {
		t.Error("equal content returned by two calls is held twice")
	}
	if same(r2.Files[0].Content, r2.Files[1].Content) || !bytes.Equal(r2.Files[1].Content, big('b')) {
		t.Error("different content was merged")
	}
	sb := NewSandbox("sb-1")
	sb.PlatformWrite("/home/agent/.astrabox/runtime/s1/bundle.bin", r1.Files[0].Content, 0o600, OwnerWorkload)
	mode, owner, size, ok := sb.meta("/home/agent/.astrabox/runtime/s1/bundle.bin")
	if !ok || mode != 0o600 || owner != OwnerWorkload || size != 64<<10 {
		t.Fatalf("meta: %o %s %d %v", mode, owner, size, ok)
	}
	if f := sb.files["/home/agent/.astrabox/runtime/s1/bundle.bin"]; !same(f.Content, r1.Files[0].Content) {
		t.Error("delivery copied the material")
	}
}
