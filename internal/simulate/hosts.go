package simulate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/astrabox-dev/astrabox/internal/harness"
)

// Hosts are the machines a run's replicas live on. On the platform every replica is its own host: its own
// interpreter (so its own string-hash seed, which decides the order of a set of strings), its own home and
// temporary directories. Here each replica name gets a string-hash seed derived from the run's seed and the
// name, and a fork server started with that seed (a forked process keeps its parent's seed); every replica
// process gets home, temporary, cache and scratch directories of its own, created when it starts and removed
// when its scenario ends, so that nothing a provider keeps in local files reaches another replica, a
// replacement after a host loss, or another scenario. Hosts are safe for concurrent use.
type Hosts struct {
	python, dir string
	seed        int64
	fork        bool
	verbose     io.Writer
	ctx         context.Context

	// root is the Hosts whose fork servers this one uses, slot which of them (Slot): nil and 0 for a run's
	// own Hosts, whose mu, servers and closed are the only ones used.
	root *Hosts
	slot int

	mu      sync.Mutex
	servers map[serverKey]*hostServer
	closed  bool
}

// serverKey names a fork server: the replica whose seed it has, and the scenario slot it serves (0 unless
// the run asked for a server per slot, Slot).
type serverKey struct {
	replica string
	slot    int
}

type hostServer struct {
	ready chan struct{} // closed once z or err is set
	z     *harness.Zygote
	err   error
}

// NewHosts prepares the hosts of a run of the provider in project dir with python. Fork servers start on
// first use (or at Prestart) and live until Close; ctx bounds their start.
func NewHosts(ctx context.Context, python, dir string, seed int64, verbose io.Writer) *Hosts {
	return &Hosts{python: python, dir: dir, seed: seed, fork: true, verbose: verbose, ctx: ctx, servers: map[serverKey]*hostServer{}}
}

// unforked is hosts without fork servers: every replica starts its own interpreter (with its own seed).
func unforked(seed int64) *Hosts {
	return &Hosts{seed: seed, servers: map[serverKey]*hostServer{}}
}

// HashSeed is the string-hash seed (PYTHONHASHSEED) of a replica: derived from the run's seed and the
// replica's name, so the same seed gives the same seeds, and different replicas get different ones.
func (h *Hosts) HashSeed(replica string) uint32 {
	sum := sha256.Sum256([]byte(strconv.FormatInt(h.seed, 10) + "|" + replica))
	// PYTHONHASHSEED takes 0 (randomisation off) to 4294967295; 0 is avoided.
	return binary.BigEndian.Uint32(sum[:4])%4294967295 + 1
}

// Slot is the hosts of scenario slot i: the same replicas, seeds and directories, with fork servers of its
// own (slot 0 is h itself). A fork server forks one process at a time, and the processes it forked share its
// pages copy-on-write; slots with servers of their own neither wait for each other's forks nor write to pages
// each other's replicas share. Every slot's server of a replica has that replica's string-hash seed, so a
// scenario behaves the same whichever slot plays it. Close the run's hosts (h), not a slot's.
func (h *Hosts) Slot(i int) *Hosts {
	if h == nil || i <= 0 {
		return h
	}
	root := h.top()
	return &Hosts{python: root.python, dir: root.dir, seed: root.seed, fork: root.fork, verbose: root.verbose,
		ctx: root.ctx, root: root, slot: i}
}

// top is the run's hosts of which h is a slot (h itself when it is not one).
func (h *Hosts) top() *Hosts {
	if h.root != nil {
		return h.root
	}
	return h
}

// ForkServers are the fork servers started so far (and ready), of every slot; for measurements.
func (h *Hosts) ForkServers() []*harness.Zygote {
	if h == nil {
		return nil
	}
	root := h.top()
	root.mu.Lock()
	servers := make([]*hostServer, 0, len(root.servers))
	for _, s := range root.servers {
		servers = append(servers, s)
	}
	root.mu.Unlock()
	var out []*harness.Zygote
	for _, s := range servers {
		<-s.ready
		if s.z != nil {
			out = append(out, s.z)
		}
	}
	return out
}

// Prestart starts the fork servers of the named replicas in the background.
func (h *Hosts) Prestart(replicas ...string) {
	for _, name := range replicas {
		h.server(name)
	}
}

// ForkServer returns the fork server of a replica, starting it if needed; nil when there is none (it could
// not start, or these hosts do not fork): the replica then starts its own interpreter.
func (h *Hosts) ForkServer(replica string) *harness.Zygote {
	s := h.server(replica)
	if s == nil {
		return nil
	}
	select {
	case <-s.ready:
	case <-h.ctx.Done():
		return nil
	}
	return s.z
}

func (h *Hosts) server(replica string) *hostServer {
	if h == nil || !h.fork {
		return nil
	}
	root, key := h.top(), serverKey{replica: replica, slot: h.slot}
	root.mu.Lock()
	defer root.mu.Unlock()
	if root.closed {
		return nil
	}
	if s := root.servers[key]; s != nil {
		return s
	}
	s := &hostServer{ready: make(chan struct{})}
	root.servers[key] = s
	go func() {
		defer close(s.ready)
		s.z, s.err = harness.StartZygote(h.ctx, h.python, h.dir, h.hashSeedEnv(replica))
		if s.err != nil && h.verbose != nil {
			fmt.Fprintf(h.verbose, "astrabox: replica %s starts without a fork server: %v\n", replica, s.err)
		}
	}()
	return s
}

func (h *Hosts) hashSeedEnv(replica string) string {
	return fmt.Sprintf("PYTHONHASHSEED=%d", h.HashSeed(replica))
}

// Close stops every fork server, of every slot; on a slot's hosts (Slot) it does nothing.
func (h *Hosts) Close() {
	if h == nil || h.root != nil {
		return
	}
	h.mu.Lock()
	h.closed = true
	servers := h.servers
	h.servers = map[serverKey]*hostServer{}
	h.mu.Unlock()
	// All at once: each waits for its interpreter to exit.
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-s.ready
			if s.z != nil {
				s.z.Close()
			}
		}()
	}
	wg.Wait()
}

// host is the machine of one replica process: its directories and the environment that points at them.
type host struct {
	root    string
	replica string
	env     []string
}

// newHost creates fresh directories for one process of a replica: home (with the XDG cache, config, data and
// state directories under it), a temporary directory and a scratch directory.
func (h *Hosts) newHost(replica string) (*host, error) {
	root, err := os.MkdirTemp("", "astrabox-host-"+replica+"-")
	if err != nil {
		return nil, fmt.Errorf("create the host directories of replica %s: %w", replica, err)
	}
	home, tmp, scratch := filepath.Join(root, "home"), filepath.Join(root, "tmp"), filepath.Join(root, "scratch")
	dirs := []string{home, tmp, scratch, filepath.Join(home, ".cache"), filepath.Join(home, ".config"),
		filepath.Join(home, ".local", "share"), filepath.Join(home, ".local", "state")}
	// Parents before children, one mkdir each (MkdirAll would stat every path and its parents first).
	for _, d := range append(dirs[:5:5], filepath.Join(home, ".local"), dirs[5], dirs[6]) {
		if err := os.Mkdir(d, 0o700); err != nil {
			removeTree(root)
			return nil, fmt.Errorf("create the host directories of replica %s: %w", replica, err)
		}
	}
	return &host{root: root, replica: replica, env: []string{
		"HOME=" + home, "TMPDIR=" + tmp, "TMP=" + tmp, "TEMP=" + tmp,
		"XDG_CACHE_HOME=" + dirs[3], "XDG_CONFIG_HOME=" + dirs[4], "XDG_DATA_HOME=" + dirs[5], "XDG_STATE_HOME=" + dirs[6],
		"ASTRABOX_SCRATCH_DIR=" + scratch, h.hashSeedEnv(replica),
	}}, nil
}

// removeTree removes a host's directories, making read-only directories a provider left writable first.
func removeTree(root string) {
	if os.RemoveAll(root) == nil {
		return
	}
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(root)
}
