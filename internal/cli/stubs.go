package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/astrabox-dev/astrabox/internal/stubs"
)

// StubsServeOptions are the options of `astrabox stubs serve`.
type StubsServeOptions struct {
	// Dir holds the WireMock mappings (DIR/mappings/*.json, or *.json under DIR) and DIR/__files.
	Dir string
	// Host is the address to listen on; Port the port (0: any free port).
	Host string
	Port int
}

// DefaultStubsPort is the port `stubs serve` listens on by default, WireMock's own default.
const DefaultStubsPort = 8080

// NewCmdStubs builds `astrabox stubs` and its subcommands.
func NewCmdStubs(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stubs",
		Short: "Serve a service's WireMock mappings on their own",
		Long: `Work with the WireMock mappings a declared service uses as its stand-in
([tool.astrabox.services.NAME] stubs = "DIR"), outside a run: for the author's own tests, and to try
mappings before a run. docs/services.md lists what of WireMock is supported.`,
		Example: `  astrabox stubs serve stubs/vault`,
	}
	cmd.AddCommand(NewCmdStubsServe(f, nil))
	return cmd
}

// NewCmdStubsServe builds `astrabox stubs serve`; runF, when set, replaces the run.
func NewCmdStubsServe(f *Factory, runF func(*StubsServeOptions) error) *cobra.Command {
	o := &StubsServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve DIR",
		Short: "Serve WireMock mappings on a port, as the kit serves them during a run",
		Long: `Serve the WireMock mappings under DIR over plain HTTP until interrupted, matched and answered
exactly as the kit answers them during a run: DIR/mappings/*.json (or *.json under DIR when there is no
mappings directory) with body files in DIR/__files, in WireMock 3's format, including files WireMock
saved itself. Every mapping file the kit refuses is listed at once, with the file, the mapping and the
reason, before anything is served.

Each request is logged on stderr with its status. An unmatched request is answered 404 with the closest
mapping, chosen as WireMock chooses it, and the parts of the request it differs in.

Exit status: 0 when interrupted after serving, 2 when the mappings cannot be loaded or the port cannot
be opened, or on bad usage.`,
		Example: `  astrabox stubs serve stubs/vault
  astrabox stubs serve --port 9090 stubs/vault
  astrabox stubs serve --port 0 --host 0.0.0.0 stubs/vault`,
		Args: exactArgs("stubs DIR", "for example stubs/vault"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			if o.Port < 0 || o.Port > 65535 {
				return usagef("--port must be between 0 and 65535, not %d", o.Port)
			}
			if o.Host == "" {
				return usagef("--host must not be empty (127.0.0.1 serves this machine only)")
			}
			if runF != nil {
				return runF(o)
			}
			return runStubsServe(cmd, f, o)
		},
	}
	cmd.Flags().IntVarP(&o.Port, "port", "p", DefaultStubsPort, "port to listen on (0: any free port)")
	cmd.Flags().StringVar(&o.Host, "host", "127.0.0.1", "address to listen on")
	return cmd
}

func runStubsServe(cmd *cobra.Command, f *Factory, o *StubsServeOptions) error {
	ctx, cancel := signalContext(cmd.Context())
	defer cancel()
	set, err := stubs.Load(o.Dir)
	if err != nil {
		return asUndecided(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		return asUndecided(fmt.Errorf("stubs serve: %w (choose another --port, or --port 0 for any free port)", err))
	}
	fmt.Fprintf(f.IO.Out, "serving %d mappings from %s on http://%s (Ctrl-C to stop)\n", len(set.Mappings()), o.Dir, ln.Addr())
	var log io.Writer = f.IO.Err
	if f.Quiet {
		log = io.Discard
	}
	if err := serveStubs(ctx, set, ln, log); err != nil {
		return asUndecided(err)
	}
	return nil
}

// serveStubs serves set on ln until ctx ends, logging one line per request on log.
func serveStubs(ctx context.Context, set *stubs.Set, ln net.Listener, log io.Writer) error {
	var mu sync.Mutex
	// inflight counts handlers still running: Shutdown does not wait for one whose connection was taken
	// over (a fault), whose log line would otherwise be lost when serving ends.
	var inflight sync.WaitGroup
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Done()
		rec := &statusWriter{ResponseWriter: w}
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case rec.hijacked:
				fmt.Fprintf(log, "%s %s -> fault (connection closed without an answer)\n", r.Method, r.URL.RequestURI())
			default:
				fmt.Fprintf(log, "%s %s -> %d\n", r.Method, r.URL.RequestURI(), rec.code())
			}
		}()
		set.ServeHTTP(rec, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("stubs serve: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stubs serve: %w", err)
	}
	finished := make(chan struct{})
	go func() { inflight.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-shut.Done(): // a handler still stuck after the shutdown's bound is left; serving has ended
	}
	return nil
}

// statusWriter remembers the status a handler wrote, and whether it took the connection over (a fault).
type statusWriter struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Hijack lets a stub's fault take the connection over.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("stubs serve: the connection cannot be taken over")
	}
	s.hijacked = true
	return hj.Hijack()
}
