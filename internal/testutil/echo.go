package testutil

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// PipeEcho is a Python process that answers frames over two pipes, the way a harness does (requests on its
// descriptor 3, replies on its descriptor 4): the floor the round-trip benchmarks compare the kit's calls with.
// Every round-trip benchmark meets the same echo (EchoScript), so their floors compare.
type PipeEcho struct {
	// Req is where the benchmark writes requests; Rep is where it reads replies.
	Req, Rep *os.File
	// Pid is the echo process's pid, for CPU read off /proc.
	Pid  int
	cmd  *exec.Cmd
	once sync.Once
}

// EchoScript answers every frame on descriptor 3 with a small reply frame on descriptor 4, carrying the
// request's id: the least any process boundary costs, with the harness's framing and JSON but none of its
// work.
const EchoScript = `
import json, os, struct
def read(n):
    b = b""
    while len(b) < n:
        c = os.read(3, n - len(b))
        if not c:
            os._exit(0)
        b += c
    return b
while True:
    (n,) = struct.unpack(">I", read(4))
    msg = json.loads(read(n))
    body = json.dumps({"kind": "reply", "id": msg["id"], "ok": True}).encode()
    os.write(4, struct.pack(">I", len(body)) + body)
`

// StartPipeEcho starts EchoScript in the interpreter behind `python3` (RealPython) with the two pipes,
// failing tb if it cannot. Stop ends it; a cleanup of tb stops it too if the caller did not.
func StartPipeEcho(tb testing.TB) *PipeEcho {
	tb.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		tb.Fatal(err)
	}
	cmd := exec.Command(Python(tb), "-c", EchoScript)
	cmd.ExtraFiles = []*os.File{reqR, repW}
	err = cmd.Start()
	// The child holds its own copies of its ends now (or never will): the kit's are closed either way, so the
	// echo sees end of input when Req closes and a read of Rep ends when the echo exits.
	reqR.Close()
	repW.Close()
	if err != nil {
		reqW.Close()
		repR.Close()
		tb.Fatalf("echo: %v", err)
	}
	e := &PipeEcho{Req: reqW, Rep: repR, Pid: cmd.Process.Pid, cmd: cmd}
	tb.Cleanup(e.Stop)
	return e
}

// Stop closes the requests' pipe (the echo ends on end of input), waits for the process and closes the
// replies' pipe. It can be called more than once.
func (e *PipeEcho) Stop() {
	e.once.Do(func() {
		e.Req.Close()
		e.cmd.Wait()
		e.Rep.Close()
	})
}
