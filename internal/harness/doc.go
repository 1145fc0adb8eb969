// Package harness runs a runtime preparation provider inside the project's own
// Python interpreter and talks to it over the harness protocol described in
// docs/protocol.md.
//
// One [Process] is one harness child: one simulated platform replica. The
// package embeds the stdlib-only Python side (the astrabox SDK and the runner,
// see [SDKDir]), starts it in its own process group with the protocol on
// descriptors 3 and 4, drains the provider's stdout and stderr at all times
// into bounded per-call captures, enforces deadlines (cancel, grace, stack
// dump, kill), polls the resident memory of the whole process tree, and cleans
// up every process it started, including descendants that left the group with
// setsid.
//
// # Fork server
//
// A [Zygote] is one interpreter that has imported the harness and forks ready
// harness processes on request; a Process started with Options.Zygote is forked
// from it (its own process group, pipes, environment and limits, exactly as a
// started one) and gets its exit status through it. Replica sets use one to
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
// Close and Kill signal the whole process group, then kill every process
// whose environment carries the replica token (descendants that called
// setsid), and wait for all of the package's goroutines. A descendant that
// both leaves the group and clears its environment is not found.
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
