package harness

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// procargs2 lays out a kern.procargs2 buffer as macOS does: argc, the executable path, NUL padding, the
// arguments, the environment, then NULs.
func procargs2(exe string, args, env []string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(args)))
	b = append(b, exe...)
	b = append(b, 0, 0, 0, 0)
	for _, a := range args {
		b = append(append(b, a...), 0)
	}
	for _, e := range env {
		b = append(append(b, e...), 0)
	}
	return append(b, 0, 0, 0, 0, 0, 0)
}

// TestProcargsEnv: the environment of a macOS process is found after its arguments, so that the sweep finds
// a stray by its replica token and never by an argument that merely looks like one.
func TestProcargsEnv(t *testing.T) {
	buf := procargs2("/usr/bin/python3", []string{"python3", "ASTRABOX_REPLICA_TOKEN=abc"},
		[]string{"PATH=/usr/bin", "ASTRABOX_REPLICA_TOKEN=f00d"})
	env, ok := procargsEnv(buf)
	if !ok {
		t.Fatal("a well-formed buffer was refused")
	}
	if want := "PATH=/usr/bin\x00ASTRABOX_REPLICA_TOKEN=f00d"; string(env) != want {
		t.Fatalf("env %q, want %q", env, want)
	}
	env, ok = procargsEnv(procargs2("/bin/sh", []string{"sh"}, nil))
	if !ok || len(env) != 0 {
		t.Fatalf("no environment: %q %v", env, ok)
	}
	for _, bad := range [][]byte{nil, {1, 0}, binary.LittleEndian.AppendUint32(nil, 5)} {
		if _, ok := procargsEnv(bad); ok {
			t.Errorf("truncated buffer %q accepted", bad)
		}
	}
	// More arguments announced than the buffer holds.
	if _, ok := procargsEnv(append(binary.LittleEndian.AppendUint32(nil, 9), "/x\x00a\x00"...)); ok {
		t.Error("a buffer short of its arguments was accepted")
	}
}

// TestParsePsRSS: ps's resident sizes (KiB) become bytes per pid; headers and junk lines are skipped.
func TestParsePsRSS(t *testing.T) {
	out := []byte("  PID   RSS\n  101  2048\n 2002 10\nbogus line here\n 7 x\n\n")
	want := map[int]uint64{101: 2048 << 10, 2002: 10 << 10}
	if got := parsePsRSS(out); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
