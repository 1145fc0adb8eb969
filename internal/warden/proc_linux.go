package warden

import (
	"bytes"
	"os"
	"strconv"
)

// stat is what /proc/<pid>/stat tells about one process.
type stat struct {
	ppid  int
	start uint64 // clock ticks after boot
	state byte
}

func readStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, false
	}
	f := bytes.Fields(b[i+2:]) // f[0] is field 3 (state); field n is f[n-3]
	if len(f) < 20 {
		return stat{}, false
	}
	s := stat{state: f[0][0]}
	s.ppid, _ = strconv.Atoi(string(f[1]))
	s.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return s, true
}

// Below returns the live (non-zombie) descendants of root, from one pass over the parent links in /proc.
func Below(root int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var list []entry
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if s, ok := readStat(pid); ok && s.state != 'Z' {
			list = append(list, entry{pid: pid, ppid: s.ppid})
		}
	}
	return descendants(root, list)
}
