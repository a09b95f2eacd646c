package replicationtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readyTimeout bounds a start. A node restarted after SIGKILL waits for its
// old registration to expire (the broker session) before it is ready.
const readyTimeout = 40 * time.Second

// node is one shale broker (id fixed, ports and data dir kept across its
// runs) run by a test as a child process. Its stderr across every run is
// kept in one buffer, each run headed by a marker line.
type node struct {
	t     testing.TB
	id    int32
	dir   string   // data dir
	args  []string // after "shale"
	kafka string   // Kafka address
	admin string   // admin HTTP address

	stderr lockedBuffer
	runs   int
	paused atomic.Bool // between pause and resume
	cutOff atomic.Bool // its control plane is cut (natsProxy); its views are stale

	mu struct {
		sync.Mutex
		cmd  *exec.Cmd
		done chan struct{} // closed when the current run has exited
		cl   *kgo.Client   // seeded with this node only; nil until used
	}
}

// lockedBuffer is a bytes.Buffer safe for the exec copier and the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// newNode returns node id of a cluster on the NATS URLs natsURLs
// (comma-separated), with its data dir under dir, fresh Kafka and admin
// ports, a 2 s broker session and controller lease, a 3 s replica.lag.time.max,
// and extra flags.
func newNode(t testing.TB, dir string, id int32, natsURLs string, extra ...string) *node {
	n := &node{t: t, id: id, dir: filepath.Join(dir, fmt.Sprintf("node-%d", id)), kafka: freeAddr(t), admin: freeAddr(t)}
	n.args = append([]string{"serve",
		"--node-id", fmt.Sprint(id),
		"--data-dir", n.dir,
		"--listen", n.kafka,
		"--admin-listen", n.admin,
		"--nats", natsURLs,
		"--broker-session-timeout", "2s",
		"--controller-lease", "2s",
		"--replica-lag-time-max", "3s",
	}, extra...)
	t.Cleanup(n.cleanup)
	return n
}

// childEnv is the test's environment without SHALE_* variables.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHALE_") {
			env = append(env, kv)
		}
	}
	return env
}

// start launches a run of the node; it does not wait for readiness.
func (n *node) start() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.cmd != nil {
		n.t.Fatalf("node %d: start while a run is live", n.id)
	}
	n.runs++
	fmt.Fprintf(&n.stderr, "=== replicationtest: node %d run %d: shale %s\n", n.id, n.runs, strings.Join(n.args, " "))
	cmd := exec.Command(shaleBin, n.args...)
	cmd.Env = childEnv()
	cmd.Stderr = &n.stderr
	cmd.Stdout = &n.stderr
	// If the test binary dies, the kernel kills the node too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("starting shale: %v", err)
	}
	done := make(chan struct{})
	n.mu.cmd, n.mu.done = cmd, done
	go func() { // owned by this run; ends when the process exits
		cmd.Wait()
		close(done)
	}()
}

func (n *node) current() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.cmd, n.mu.done
}

// alive reports whether a run is live.
func (n *node) alive() bool {
	_, done := n.current()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// waitReady polls GET /readyz until it answers 200 (the node has registered
// in the control plane and serves Kafka), failing the test if the process
// exits first or readyTimeout passes. It returns how long it took.
func (n *node) waitReady() time.Duration {
	n.t.Helper()
	_, done := n.current()
	begin := time.Now()
	deadline := begin.Add(readyTimeout)
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := hc.Get("http://" + n.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(begin)
			}
		}
		select {
		case <-done:
			n.t.Fatalf("node %d exited before it was ready:\n%s", n.id, n.tail())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("node %d not ready after %v (last error %v):\n%s", n.id, readyTimeout, err, n.tail())
		}
	}
}

// kill sends SIGKILL, waits for the exit and closes the run's client.
func (n *node) kill() {
	n.t.Helper()
	cmd, done := n.current()
	if cmd == nil {
		n.t.Fatalf("node %d: kill without a live run", n.id)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		n.t.Fatalf("node %d did not die within 30s of SIGKILL", n.id)
	}
	n.mu.Lock()
	cl := n.mu.cl
	n.mu.cmd, n.mu.done, n.mu.cl = nil, nil, nil
	n.mu.Unlock()
	n.paused.Store(false)
	if cl != nil {
		cl.Close()
	}
}

// pause sends SIGSTOP: the process keeps its sockets but runs nothing.
func (n *node) pause() {
	n.signal(syscall.SIGSTOP)
	n.paused.Store(true)
}

// resume sends SIGCONT to a paused run.
func (n *node) resume() {
	n.signal(syscall.SIGCONT)
	n.paused.Store(false)
}

func (n *node) signal(sig syscall.Signal) {
	n.t.Helper()
	cmd, _ := n.current()
	if cmd == nil {
		n.t.Fatalf("node %d: %v without a live run", n.id, sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		n.t.Fatalf("node %d: %v: %v", n.id, sig, err)
	}
}

// partitionDir is the directory of one partition's log on this node.
func (n *node) partitionDir(topic string, p int32) string {
	return filepath.Join(n.dir, "logs", fmt.Sprintf("%s-%d", topic, p))
}

// client returns a franz-go client whose only seed is this node, made on
// first use and closed by kill and cleanup.
func (n *node) client() *kgo.Client {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.cl == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if err != nil {
			n.t.Fatal(err)
		}
		n.mu.cl = cl
	}
	return n.mu.cl
}

// cleanup kills a run left live and logs stderr on failure.
func (n *node) cleanup() {
	if cmd, done := n.current(); cmd != nil {
		cmd.Process.Signal(syscall.SIGCONT) // a paused run dies on SIGKILL too, but be explicit
		cmd.Process.Signal(syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
	n.mu.Lock()
	if n.mu.cl != nil {
		n.mu.cl.Close()
		n.mu.cl = nil
	}
	n.mu.Unlock()
	if n.t.Failed() {
		n.t.Logf("node %d stderr (tail):\n%s", n.id, n.tail())
	}
}

// tail is the end of the captured stderr.
func (n *node) tail() string {
	s := n.stderr.String()
	const max = 6 << 10
	if len(s) > max {
		s = "...\n" + s[len(s)-max:]
	}
	return s
}

// checkNoPanic fails the test if any run's stderr shows a Go panic, a fatal
// runtime error or a data race.
func (n *node) checkNoPanic() {
	n.t.Helper()
	s := n.stderr.String()
	for _, bad := range []string{"panic:", "panicked", "fatal error:", "goroutine 1 [", "DATA RACE"} {
		if i := strings.Index(s, bad); i >= 0 {
			lo := max(0, i-2000)
			hi := min(len(s), i+4000)
			n.t.Fatalf("node %d stderr contains %q:\n%s", n.id, bad, s[lo:hi])
		}
	}
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return errors.New("condition not met before the deadline")
		}
		<-tick.C
	}
	return nil
}

// ctxFor is a context cancelled after d or at the end of the test.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
