// Package harness runs a runtime preparation provider inside the project's own
// Python interpreter and talks to it over the harness protocol described in
// docs/protocol.md.
//
// One [Process] is one harness child: one simulated platform replica. The
// package embeds the stdlib-only Python side (the astrabox SDK and the runner,
// see [SDKDir]), starts it under a supervisor in a session of its own (no
// controlling terminal) with the protocol on descriptors 3 and 4, drains the
// provider's stdout and stderr at all times into bounded per-call captures,
// enforces deadlines (cancel, grace, stack dump, kill), polls the resident
// memory of the whole process tree, and cleans up every process it started,
// wherever it went.
//
// The work is split by job, after hashicorp/go-plugin: a launcher starts the
// process and returns its pid, its supervisor and its exit (launch.go: the
// warden of package warden; zygote.go: the fork server); the protocol client
// speaks to it (client.go); supervision bounds and ends it (supervise.go);
// classify turns its end into a [ProcessError] (classify.go); its lifecycle
// state lives behind one mutex (lifecycle.go).
//
// # Fork server
//
// A [Zygote] is one interpreter that has imported the harness and forks ready
// harness processes on request; a Process started with Options.Zygote is forked
// from it (with no process in between: its own session, pipes, environment and
// limits, exactly as a started one) and gets its exit status through it. Replica sets use one to
// avoid an interpreter start per replica; when it cannot serve, the process is
// started as its own interpreter.
//
// # Limits
//
// [DefaultLimits] documents the default values of [Limits]. The address-space
// and open-files limits are applied by the harness itself with setrlimit; the
// resident-memory limit is enforced from Go by polling /proc every 50 ms and
// killing the process group when the sum over the harness and its descendants
// exceeds it.
//
// # Output
//
// The provider's stdout and stderr are pipes drained at all times. Each call's
// Reply carries the bytes written since the previous call's sync marker
// (docs/protocol.md), at most Limits.CaptureBytes per stream (head and tail
// halves, the rest counted). After a reply Go waits up to one second for the
// markers, and not at all on a stream that is closed or a process that is
// gone; without a marker the output is cut where it stood. A reply that says
// no marker was written (the harness proved nothing but itself wrote since the
// last one) is cut at once.
//
// # Cleanup
//
// Every harness has a child subreaper (PR_SET_CHILD_SUBREAPER) above its
// descendants: its warden, or, when forked, the harness itself and then the
// fork server. Every descendant of the harness that loses its parent is
// re-parented to it, whatever it did to its group, session or environment; when
// the harness has exited, the warden (or the fork server) kills everything left
// and says so. Close and Kill signal the harness's group, wait (bounded) for
// that word, sweep once more unless it said nothing is left (the group,
// everything below the supervisor, every process whose environment carries the
// replica token), and wait for all of the package's goroutines. No wait is
// unbounded, and none waits for a pipe that a stray may hold. Harnesses,
// wardens and the fork server die with the kit, even killed with SIGKILL. A
// forked harness and all it starts cannot signal their fork server (an audit
// hook and a seccomp filter refuse it; docs/protocol.md).
//
// A provider that stops the kit with SIGSTOP is found out: the wardens and the
// fork server continue a kit stopped by a signal it did not give itself, and
// every replica alive fails with [KindProtocol] (see docs/protocol.md).
//
// # Errors
//
// A call either gets a [Reply] (the harness answered, with a value or with the
// provider's exception) or fails with a [*ProcessError] whose [ErrorKind] says
// why the harness did not answer: [KindExited], [KindSignaled], [KindHung],
// [KindMemoryLimit], [KindProtocol], [KindClosed] or [KindStart]. After any
// such error the process is dead and every later call fails at once with
// [KindClosed].
package harness
