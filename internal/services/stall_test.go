package services

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/astrabox-dev/astrabox/internal/double"
)

// troubledSpec is a service whose fake misbehaves on some paths (testdata/fakes/troubled.py), started the
// way an author often writes it: a shell line that is not exec'd, so the shell stays the fake's parent.
func troubledSpec(t *testing.T, extra string) Spec {
	return fakeSpec(t, "cd fakes && python3 troubled.py --port {port}"+extra)
}

// serviceGet sends a GET for the service through the double's listener of replica r1, with a client timeout
// as long as an author's (30s), and returns the status (0 when the connection failed) and body.
func serviceGet(url string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set(double.ServiceHeader, "records")
	req.Header.Set(double.HostHeader, "records.corp.example:443")
	resp, err := (&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, b.String()
}

// TestStalledServiceNeverHoldsTheScenarioEnd: a fake that never answers one path (or answers a byte a
// second) does not hold the double's Close, which once waited for its handler without a bound and so hung
// the whole run: Close cancels the request and returns within its bound.
func TestStalledServiceNeverHoldsTheScenarioEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	spec := troubledSpec(t, "")
	si, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	for _, path := range []string{"/token", "/drip"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			d, err := double.Start(double.Options{Upstreams: map[string]double.Upstream{"records": Upstream(spec, si)}})
			if err != nil {
				t.Fatal(err)
			}
			base, err := d.URL("r1")
			if err != nil {
				t.Fatal(err)
			}
			d.SetInFlight("r1", double.Call{Callback: "prepare_session", CallID: "c1", Step: "4"})
			answered := make(chan int, 1)
			go func() { status, _ := serviceGet(base + path); answered <- status }()
			for i := 0; len(d.Requests()) == 0; i++ {
				if i == 1000 {
					t.Fatal("the request never reached the double")
				}
				time.Sleep(10 * time.Millisecond)
			}
			closed := make(chan error, 1)
			go func() { closed <- d.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close = %v", err)
				}
			case <-time.After(30 * time.Second): // a generous ceiling; the bound is double.CloseBound
				t.Fatalf("the double's Close still waits for GET %s 30s later", path)
			}
			select {
			case status := <-answered:
				if status == http.StatusOK {
					t.Errorf("GET %s answered 200 although the service never finished", path)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("GET %s never ended", path)
			}
		})
	}
}

// TestServiceThatMisbehavesIsAnsweredByTheKit: a fake that closes the connection without an answer, or
// answers far more than any real service (here 200 MiB), gets the provider a 502 from the kit naming the
// service, and the kit never holds the whole answer.
func TestServiceThatMisbehavesIsAnsweredByTheKit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	spec := troubledSpec(t, "")
	si, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer si.Close()
	d, err := double.Start(double.Options{Upstreams: map[string]double.Upstream{"records": Upstream(spec, si)}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	base, _ := d.URL("r1")
	for path, want := range map[string]string{
		"/close":        "the fake for service records did not answer",
		"/flood?mb=200": "exceeds 64 MiB",
	} {
		status, body := serviceGet(base + path)
		if status != http.StatusBadGateway || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d %q, want 502 with %q", path, status, body, want)
		}
	}
}

// killedKitEnv makes the test binary play a kit that starts a fake and is then killed
// (TestNoFakeOutlivesAKilledKit); its value is the pid file the fake writes.
const killedKitEnv = "ASTRABOX_TEST_KILLED_KIT"

func init() {
	pidFile := os.Getenv(killedKitEnv)
	if pidFile == "" {
		return
	}
	wd, _ := os.Getwd()
	spec := Spec{Name: "records", URLs: []string{"https://records.corp.example"}, Hosts: []string{"records.corp.example:443"},
		Run: "cd fakes && python3 troubled.py --port {port} --pidfile " + pidFile, Dir: filepath.Join(wd, "testdata"),
		Ready: "/", ReadyTimeout: 10 * time.Second, Reset: ResetRequest}
	if _, err := Start(context.Background(), spec); err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("ready\n")
	time.Sleep(time.Hour)
	os.Exit(0)
}

// TestNoFakeOutlivesAKilledKit: a kit killed with SIGKILL (no cleanup at all) leaves no fake behind, even one
// whose shell line keeps the shell as its parent (the parent-death signal reaches only the shell).
func TestNoFakeOutlivesAKilledKit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Python")
	}
	pidFile := filepath.Join(t.TempDir(), "fake.pid")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), killedKitEnv+"="+pidFile)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("the kit did not start its fake: %q", line)
	}
	b, _ := os.ReadFile(pidFile)
	fake, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if fake == 0 {
		t.Fatal("the fake wrote no pid")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for i := 0; alive(fake); i++ {
		if i == 1000 { // a generous ceiling of about 10s
			_ = syscall.Kill(fake, syscall.SIGKILL)
			t.Fatalf("the fake (pid %d) outlived the killed kit", fake)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
