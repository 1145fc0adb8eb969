package harness

import (
	"time"
)

// Limits bound one harness process. A zero field takes its default from
// DefaultLimits (see WithDefaults).
type Limits struct {
	// AddressSpace is RLIMIT_AS in bytes, set by the harness (default 4 GiB).
	// Python with MALLOC_ARENA_MAX=2 needs 2-4 GiB to start threads.
	AddressSpace uint64
	// OpenFiles is RLIMIT_NOFILE, set by the harness (default 1024).
	OpenFiles uint64
	// MemoryRSS bounds the resident size of the harness and all its
	// descendants, polled from /proc every 50 ms; above it the group is
	// killed and the call fails with KindMemoryLimit (default 1 GiB).
	MemoryRSS uint64
	// CaptureBytes bounds the stdout and the stderr kept per call and stream:
	// the first half and the last half are kept, the rest counted in
	// Capture.Dropped (default 64 KiB).
	CaptureBytes int
	// Grace is how long a call may take to settle after cancel before the
	// process is dumped and killed, and how long Close waits after SIGTERM
	// (default 2 s).
	Grace time.Duration
	// StartTimeout bounds the wait for hello (default 30 s).
	StartTimeout time.Duration
	// LoadTimeout bounds the load call: importing and instantiating the
	// provider (default 60 s).
	LoadTimeout time.Duration
	// CloseTimeout is how long Close waits for the harness to exit after
	// shutdown before it sends SIGTERM (default 2 s).
	CloseTimeout time.Duration
}

// DefaultLimits returns the default limits: address space 4 GiB, 1024 open
// files, resident memory 1 GiB, 64 KiB of output kept per call and stream
// (32 KiB head, 32 KiB tail), grace 2 s, start timeout 30 s, load timeout
// 60 s, close timeout 2 s.
func DefaultLimits() Limits {
	return Limits{
		AddressSpace: 4 << 30,
		OpenFiles:    1024,
		MemoryRSS:    1 << 30,
		CaptureBytes: 64 << 10,
		Grace:        2 * time.Second,
		StartTimeout: 30 * time.Second,
		LoadTimeout:  60 * time.Second,
		CloseTimeout: 2 * time.Second,
	}
}

// WithDefaults returns l with every zero field replaced by its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.AddressSpace == 0 {
		l.AddressSpace = d.AddressSpace
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.MemoryRSS == 0 {
		l.MemoryRSS = d.MemoryRSS
	}
	if l.CaptureBytes <= 0 {
		l.CaptureBytes = d.CaptureBytes
	}
	if l.Grace <= 0 {
		l.Grace = d.Grace
	}
	if l.StartTimeout <= 0 {
		l.StartTimeout = d.StartTimeout
	}
	if l.LoadTimeout <= 0 {
		l.LoadTimeout = d.LoadTimeout
	}
	if l.CloseTimeout <= 0 {
		l.CloseTimeout = d.CloseTimeout
	}
	return l
}
