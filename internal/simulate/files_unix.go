package simulate

import "syscall"

// nonBlock opens a file without waiting for a writer (a FIFO).
const nonBlock = syscall.O_NONBLOCK
