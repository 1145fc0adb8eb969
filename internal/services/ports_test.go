package services

import (
	"context"
	"net"
	"strings"
	"testing"
)

// TestFreePortIsBelowTheEphemeralRange: a fake's port is one the system never hands out for outgoing
// connections or binds to port 0, so the provider's replicas cannot take it before the fake binds it.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	lo, _ := ephemeralRange()
	if lo-fakePortFloor < 1024 {
		t.Skipf("the ephemeral range starts at %d: no room below it", lo)
	}
	for range 20 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < fakePortFloor || port >= lo {
			t.Fatalf("port %d is outside [%d, %d)", port, fakePortFloor, lo)
		}
	}
}

// TestFakeThatLostItsPortIsStartedOnAnother: the first port offered is held by another process by the time
// the fake binds it; the fake exits, the kit sees the port held and starts it again on the next one.
func TestFakeThatLostItsPortIsStartedOnAnother(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	thief, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	held := thief.Addr().(*net.TCPAddr).Port
	offered := 0
	pickPort = func() (int, error) {
		offered++
		if offered == 1 {
			return held, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()
	si, err := Start(context.Background(), fakeSpec(t, "python3 fakes/counter.py --port {port}"))
	if err != nil {
		t.Fatalf("the fake was not started again on another port: %v", err)
	}
	defer si.Close()
	if f := si.(*Fake); f.Port() == held || offered != 2 {
		t.Fatalf("fake on port %d after %d offers (the held port was %d)", f.Port(), offered, held)
	}
	if code, _ := get(t, si.Handler(), "GET", "records.corp.example", "/"); code != 200 {
		t.Fatalf("the restarted fake answered %d", code)
	}
}

// TestFakeThatExitsOnAFreePortIsNotRetried: a fake that exits for its own reasons (its port is free) is
// reported at once, with its output, not started again.
func TestFakeThatExitsOnAFreePortIsNotRetried(t *testing.T) {
	offered := 0
	pickPort = func() (int, error) { offered++; return freePort() }
	defer func() { pickPort = freePort }()
	_, err := Start(context.Background(), fakeSpec(t, "echo 'no credentials' >&2; exit 3 # {port}"))
	if err == nil || !strings.Contains(err.Error(), "exited before it answered") || !strings.Contains(err.Error(), "no credentials") {
		t.Fatalf("err = %v", err)
	}
	if offered != 1 {
		t.Fatalf("a fake that failed on a free port was started %d times", offered)
	}
}
