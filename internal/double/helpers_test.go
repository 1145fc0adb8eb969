package double

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// newDouble starts a double closed at the end of the test.
func newDouble(t *testing.T, o Options) *Double {
	t.Helper()
	d, err := Start(o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// baseURL returns replica's URL or fails the test.
func baseURL(t *testing.T, d *Double, replica string) string {
	t.Helper()
	u, err := d.URL(replica)
	if err != nil {
		t.Fatalf("URL(%q): %v", replica, err)
	}
	return u
}

// client returns a client without connection reuse (so a dropped connection is never retried) and with a
// bound that only prevents hangs.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
}

type resp struct {
	status int
	header http.Header
	raw    []byte
	json   map[string]any
}

// send makes one request; headers are given as name, value pairs. It is safe to call from any goroutine.
func send(t *testing.T, method, url, body string, headers ...string) (resp, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return resp{}, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := client().Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, err
	}
	r := resp{status: res.StatusCode, header: res.Header, raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.json); err != nil {
			t.Errorf("%s %s: answer is not a JSON object: %q", method, url, raw)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want application/json", method, url, ct)
		}
	}
	return r, nil
}

// must makes one request that must get an answer with the wanted status.
func must(t *testing.T, want int, method, url, body string, headers ...string) resp {
	t.Helper()
	r, err := send(t, method, url, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if r.status != want {
		t.Fatalf("%s %s: status %d, want %d; body %s", method, url, r.status, want, r.raw)
	}
	return r
}

// lastRequest returns the most recent recorded request.
func lastRequest(t *testing.T, d *Double) Request {
	t.Helper()
	reqs := d.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request recorded")
	}
	return reqs[len(reqs)-1]
}

// waitHeld waits for n held requests with a bound that only prevents a hang.
func waitHeld(t *testing.T, d *Double, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.WaitHeld(ctx, n); err != nil {
		t.Fatalf("WaitHeld(%d): %v", n, err)
	}
}

type result struct {
	r   resp
	err error
}

// sendAsync makes a request in the background; the channel gets its result.
func sendAsync(t *testing.T, method, url, body string, headers ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		r, err := send(t, method, url, body, headers...)
		ch <- result{r, err}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(20 * time.Second):
		t.Fatal("request did not finish")
		return result{}
	}
}
