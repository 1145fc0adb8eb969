package services

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// A fake is told its port on its command line ({port}), so the kit picks the port and the fake binds it
// later: another process can take it in between. Ports handed out by the system for outgoing connections and
// for binds to port 0 (the ephemeral range) are taken all the time, by the provider's replicas among others,
// so a fake's port is drawn below that range, where only a deliberate bind can take it; a port the kit cannot
// bind itself is skipped. When that fails (no free port below the range), the system picks one.

// ephemeralRange is where the system draws ephemeral ports from (Linux's default when it cannot be read).
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		l, err1 := strconv.Atoi(f[0])
		h, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil && l > 0 && l <= h {
			return l, h
		}
	}
	return lo, hi
}

// fakePortFloor is the lowest port a fake is given: above the well-known and most registered services'.
const fakePortFloor = 20000

// reserved are the loopback ports given to this process's fakes and not yet released: two instances started
// at once (one per scenario slot) never get the same port, even if the system hands a just-closed port out
// again before the first fake has bound it.
var reserved = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// pickPort is freePort; tests replace it to hand out a port another process holds.
var pickPort = freePort

// reservePort finds a free loopback port that no other fake of this process holds, and reserves it.
func reservePort() (int, error) {
	for range 64 {
		port, err := pickPort()
		if err != nil {
			return 0, err
		}
		reserved.Lock()
		if !reserved.ports[port] {
			reserved.ports[port] = true
			reserved.Unlock()
			return port, nil
		}
		reserved.Unlock()
	}
	return 0, errors.New("find a free loopback port: every port offered is held by another fake")
}

// releasePort gives a fake's port back once the fake is stopped.
func releasePort(port int) {
	reserved.Lock()
	defer reserved.Unlock()
	delete(reserved.ports, port)
}

// freePort is a loopback port the kit could bind just now: drawn below the ephemeral range when there is
// room, else the system's choice.
func freePort() (int, error) {
	if lo, _ := ephemeralRange(); lo-fakePortFloor >= 1024 {
		for range 32 {
			port := fakePortFloor + rand.IntN(lo-fakePortFloor)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				ln.Close()
				return port, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// portHeld reports whether another process holds a loopback port now (the kit cannot bind it).
func portHeld(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return true
	}
	ln.Close()
	return false
}
