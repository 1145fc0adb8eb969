package warden

// StopName is the name the caller gives itself on Linux while it stops for job control. macOS cannot rename
// a process, so there the kit cannot tell the user's Ctrl-Z from another process's SIGSTOP, and leaves both.
const StopName = "astrabox-tstp"

// StoppedBySomeoneElse is always false on macOS: a stop cannot be told from the user's (see StopName).
func StoppedBySomeoneElse(int) bool { return false }

// GuardJobControl does nothing on macOS: job control keeps its default (see StopName).
func GuardJobControl() {}
