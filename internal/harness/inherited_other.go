//go:build !linux

package harness

// closeInheritedOnExec does nothing here: inherited descriptors are marked close-on-exec on Linux only.
func closeInheritedOnExec() {}
