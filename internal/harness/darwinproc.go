package harness

import (
	"bytes"
	"encoding/binary"
	"strconv"
)

// This file holds the pure parsers behind the macOS process facts (procfs_darwin.go), here so that they are
// tested on every platform.

// procargsEnv returns the environment block (NUL-separated, as /proc/<pid>/environ gives it on Linux) of a
// kern.procargs2 sysctl buffer: the argument count (a native 32-bit integer), the executable's path, NUL
// padding, argc arguments, then the environment up to an empty string. ok is false for a buffer that is not
// laid out so.
func procargsEnv(buf []byte) (env []byte, ok bool) {
	if len(buf) < 4 {
		return nil, false
	}
	argc := int(binary.LittleEndian.Uint32(buf[:4])) // both macOS architectures are little-endian
	rest := buf[4:]
	i := bytes.IndexByte(rest, 0) // the executable's path
	if i < 0 {
		return nil, false
	}
	rest = rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	for n := 0; n < argc; n++ {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return nil, false
		}
		rest = rest[i+1:]
	}
	if i := bytes.Index(rest, []byte{0, 0}); i >= 0 {
		rest = rest[:i+1]
	}
	return bytes.TrimRight(rest, "\x00"), true
}

// parsePsRSS reads the output of `ps -o pid=,rss=`: one process a line, its pid and its resident size in KiB.
// Lines that are not two numbers are skipped.
func parsePsRSS(out []byte) map[int]uint64 {
	got := map[int]uint64{}
	for _, line := range bytes.Split(out, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) != 2 {
			continue
		}
		pid, err1 := strconv.Atoi(string(f[0]))
		kb, err2 := strconv.ParseUint(string(f[1]), 10, 64)
		if err1 == nil && err2 == nil && pid > 0 {
			got[pid] = kb << 10
		}
	}
	return got
}
