package egress

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// TestStalledHandshakeDoesNotHoldClose: a client that opens a TLS connection to a declared service (directly,
// or through a CONNECT tunnel) and never finishes the handshake does not hold the proxy's Close, which once
// waited out the handshake's own 30s deadline: Close ends the connection and returns within its bound.
func TestStalledHandshakeDoesNotHoldClose(t *testing.T) {
	for _, via := range []string{"direct", "connect"} {
		t.Run(via, func(t *testing.T) {
			p, _, _ := start(t, PolicyRefuse)
			var conn net.Conn
			var err error
			if via == "direct" {
				conn, err = net.Dial("tcp", p.Routes()["vault.corp.example:8200"])
			} else {
				conn, err = net.Dial("tcp", strings.TrimPrefix(p.URL(), "http://"))
				if err == nil {
					_, _ = conn.Write([]byte("CONNECT vault.corp.example:8200 HTTP/1.1\r\nHost: vault.corp.example:8200\r\n\r\n"))
					line, _ := bufio.NewReader(conn).ReadString('\n')
					if !strings.Contains(line, "200") {
						t.Fatalf("CONNECT answered %q", line)
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, _ = conn.Write([]byte{0x16, 0x03, 0x01}) // the start of a ClientHello, and nothing more
			time.Sleep(50 * time.Millisecond)           // let the proxy start its handshake
			closed := make(chan error, 1)
			go func() { closed <- p.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close = %v", err)
				}
			case <-time.After(20 * time.Second): // a generous ceiling; the bound is CloseBound
				t.Fatal("the proxy's Close still waits for a stalled TLS handshake 20s later")
			}
		})
	}
}
