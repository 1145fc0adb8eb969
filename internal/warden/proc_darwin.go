package warden

import (
	"golang.org/x/sys/unix"
)

// sZombie is a zombie's p_stat on macOS (SZOMB in sys/proc.h).
const sZombie = 5

// stat is what the kernel's process listing (sysctl kern.proc) tells about one process.
type stat struct {
	ppid  int
	start uint64 // microseconds since the epoch
	state byte   // 'Z' for a zombie, else 'R'
}

func readStat(pid int) (stat, bool) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || k == nil || int(k.Proc.P_pid) != pid {
		return stat{}, false
	}
	s := stat{ppid: int(k.Eproc.Ppid), state: 'R'}
	if k.Proc.P_stat == sZombie {
		s.state = 'Z'
	}
	s.start = uint64(k.Proc.P_starttime.Sec)*1e6 + uint64(k.Proc.P_starttime.Usec)
	return s, true
}

// darwinEntries keeps the live (non-zombie) processes of a listing.
func darwinEntries(list []unix.KinfoProc) []entry {
	out := make([]entry, 0, len(list))
	for _, k := range list {
		if k.Proc.P_stat != sZombie {
			out = append(out, entry{pid: int(k.Proc.P_pid), ppid: int(k.Eproc.Ppid)})
		}
	}
	return out
}

// Below returns the live (non-zombie) descendants of root, from one sysctl listing of every process.
func Below(root int) []int {
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	return descendants(root, darwinEntries(all))
}
