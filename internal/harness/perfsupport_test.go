package harness

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPerfSupportLeavesTheProtocolIntact: CPython 3.12+ writes a perf map (PYTHONPERFSUPPORT) and 3.13 a jitdump
// (PYTHON_PERF_JIT_SUPPORT) through descriptors it opened itself; a harness takes its descriptors from the kit,
// so such writes landed in the protocol ("harness protocol corrupted"). A user who exports either variable to
// profile other programs must still get a run, started on its own or forked.
func TestPerfSupportLeavesTheProtocolIntact(t *testing.T) {
	skipShort(t)
	dir := fixtureDir(t, "good")
	for _, tc := range []struct{ version, env string }{{"3.12.1", "PYTHONPERFSUPPORT"}, {"3.13.0", "PYTHONPERFSUPPORT"}, {"3.13.0", "PYTHON_PERF_JIT_SUPPORT"}} {
		t.Run(tc.version+"/"+tc.env, func(t *testing.T) {
			py := filepath.Join("/root/.pyenv/versions", tc.version, "bin", "python3")
			if _, err := os.Stat(py); err != nil {
				t.Skipf("%s not installed", py)
			}
			t.Setenv(tc.env, "1")
			t.Setenv("TMPDIR", t.TempDir()) // where a map would be written
			z, err := StartZygote(context.Background(), py, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer z.Close()
			for _, o := range []Options{{Python: py}, {Python: py, Zygote: z}} {
				p, _ := startLoaded(t, dir, "good_provider.provider:Provider", o)
				for i := 0; i < 3; i++ {
					r, err := call(t, p, "prepare_session", sessionArgs(t.TempDir()), 10*time.Second)
					if err != nil || !r.OK {
						t.Fatalf("forked %v, call %d: %v %+v", o.Zygote != nil, i, err, r)
					}
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
