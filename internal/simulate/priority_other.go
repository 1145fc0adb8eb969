//go:build !linux

package simulate

import "errors"

// setIdle is not supported here: PrepareAhead is never used (CanPrepareAhead is false).
func setIdle(pid int, idle bool) error {
	return errors.New("scheduling classes are not supported on this system")
}

// setTreeNormal is not supported here either.
func setTreeNormal(pid int) error { return setIdle(pid, false) }

// canLeaveIdle is false: this system has no SCHED_IDLE.
func canLeaveIdle() bool { return false }
