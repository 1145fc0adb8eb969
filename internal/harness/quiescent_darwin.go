package harness

// Asleep reports whether every thread of the replica's process is asleep. macOS gives no thread states
// short of task_for_pid, which needs privileges: known is always false, and a cancel on write lets its held
// write go after its share of the grace instead (see simulate's cancelOnWrite).
func (p *Process) Asleep() (asleep, known bool) { return false, false }
