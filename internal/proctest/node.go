package proctest

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest/child"
)

// ReadyTimeout bounds WaitReady. A node restarted after SIGKILL first waits
// for its old broker registration to expire (the broker session, retried
// for up to 15 s), so a restart can legitimately take that long on a loaded
// machine.
const ReadyTimeout = 40 * time.Second

// exitTimeout bounds the wait for a run to exit after SIGKILL, and the
// clean-up's wait.
const exitTimeout = 30 * time.Second

// tailBytes is how much of the output Tail returns.
const tailBytes = 8 << 10

// Node is one child process (typically `shale serve`) and its restarts, run
// by a test: every Start is a new run with the same binary, arguments and
// environment, so the same data dir and ports. Its stdout and stderr across
// every run are kept in one buffer, each run headed by the line
// "=== <name>: run <n>: shale <args> (at <time>)". It is a child.Process
// (internal/proctest/child, the supervisor the chaos suite and loadbench
// use too) that fails the test instead of returning errors.
//
// The child gets the test's environment without SHALE_* variables, plus
// the Env option's; the kernel kills it if the test binary dies. A run
// still live when the test ends is killed, and on failure the output's tail
// is logged.
//
// Methods may be called from any goroutine, but Start, Kill, Stop and
// WaitExit of one Node are meant to be called by one goroutine at a time
// (the test's): they fail the test through testing.TB.
type Node struct {
	t     testing.TB
	proc  *child.Process
	env   []string // added to the filtered environment
	name  string   // in the run markers and failure messages
	admin string   // admin HTTP address; "" if the node has none
	kafka string   // Kafka address, if known
	dir   string   // data dir, if known

	out lockedBuffer

	mu struct {
		sync.Mutex
		cl *kgo.Client // seeded with this node only; nil until Client
	}
}

// Option sets up a Node at construction.
type Option func(*Node)

// Env adds KEY=value pairs to the child's environment (after the test's
// own, without SHALE_* variables, so that these win).
func Env(kv ...string) Option { return func(n *Node) { n.env = append(n.env, kv...) } }

// Name names the node in its run markers and failure messages ("e2e",
// "node 2"); the default is "shale".
func Name(name string) Option { return func(n *Node) { n.name = name } }

// AdminAddr is the admin HTTP address whose GET /readyz WaitReady polls.
// Serve sets it; without it WaitReady fails the test.
func AdminAddr(addr string) Option { return func(n *Node) { n.admin = addr } }

// NewNode prepares bin with args; nothing runs until Start. Cleanup is
// registered on t.
func NewNode(t testing.TB, bin string, args []string, opts ...Option) *Node {
	n := &Node{t: t, name: "shale"}
	for _, o := range opts {
		o(n)
	}
	n.proc = child.New(child.Config{Name: n.name, Bin: bin, Args: args, Label: "shale", Env: n.env, Output: &n.out})
	t.Cleanup(n.cleanup)
	return n
}

// Serve prepares `bin serve --data-dir dataDir --listen K --admin-listen A
// extra...`, with K and A free 127.0.0.1 addresses (see FreeAddr) kept
// across its runs; nothing runs until Start.
func Serve(t testing.TB, bin, dataDir string, extra []string, opts ...Option) *Node {
	t.Helper()
	kafka, admin := FreeAddr(t), FreeAddr(t)
	args := append([]string{"serve", "--data-dir", dataDir, "--listen", kafka, "--admin-listen", admin}, extra...)
	n := NewNode(t, bin, args, append([]Option{AdminAddr(admin)}, opts...)...)
	n.kafka, n.dir = kafka, dataDir
	return n
}

// Kafka is the Kafka address Serve chose ("" for NewNode).
func (n *Node) Kafka() string { return n.kafka }

// Admin is the admin HTTP address ("" if none was given).
func (n *Node) Admin() string { return n.admin }

// DataDir is the data dir given to Serve ("" for NewNode).
func (n *Node) DataDir() string { return n.dir }

// Args returns a copy of the arguments after the binary.
func (n *Node) Args() []string { return n.proc.Args() }

// Start launches a run; it does not wait for readiness. Starting while a
// run is live, or before the last one was ended (Kill, Stop, WaitExit),
// fails the test.
func (n *Node) Start() {
	n.t.Helper()
	if n.proc.Cmd() != nil {
		n.t.Fatalf("%s: start while a run is live", n.name)
	}
	if err := n.proc.Start(); err != nil {
		n.t.Fatal(err)
	}
}

// ChildEnv is the test's environment without SHALE_* variables (so that a
// developer's own settings do not reach a child), plus extra: what Node
// gives its runs, for other commands a test runs.
func ChildEnv(extra ...string) []string { return child.ChildEnv(extra...) }

// closeClient closes the node's client of the run that ended.
func (n *Node) closeClient() {
	n.mu.Lock()
	cl := n.mu.cl
	n.mu.cl = nil
	n.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
}

// Cmd returns the live run's command, or nil between runs (after Kill,
// Stop or WaitExit). The caller may read it (Process.Pid) and signal its
// Process from any goroutine, but must not Start or Wait it.
func (n *Node) Cmd() *exec.Cmd { return n.proc.Cmd() }

// Runs is how many times Start has launched the node.
func (n *Node) Runs() int { return n.proc.Runs() }

// Alive reports whether a run is live (started, not yet exited).
func (n *Node) Alive() bool { return n.proc.Alive() }

// Paused reports whether the live run is stopped by Pause.
func (n *Node) Paused() bool { return n.proc.Paused() }

// WaitReady polls GET /readyz on the admin address until it answers 200,
// failing the test if the run exits first or ReadyTimeout passes. It
// returns how long it took.
func (n *Node) WaitReady() time.Duration {
	n.t.Helper()
	if n.admin == "" {
		n.t.Fatalf("%s: WaitReady without an admin address", n.name)
	}
	done := n.proc.Exited()
	if done == nil {
		n.t.Fatalf("%s: WaitReady without a live run", n.name)
	}
	begin := time.Now()
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
			n.t.Fatalf("%s exited before it was ready:\n%s", n.name, n.Tail())
		case <-tick.C:
		}
		if time.Since(begin) > ReadyTimeout {
			n.t.Fatalf("%s not ready after %v (last error %v):\n%s%s", n.name, ReadyTimeout, err, n.Tail(), n.mainStack())
		}
	}
}

// Kill sends SIGKILL to the live run and waits for its exit, failing the
// test if there is no live run or it outlives 30 s.
func (n *Node) Kill() {
	n.t.Helper()
	n.stop(syscall.SIGKILL, exitTimeout)
}

// Stop sends SIGTERM (a graceful stop) to the live run and waits up to limit
// for its exit, failing the test otherwise. It returns the exit code (-1
// for death by a signal) and how long the stop took.
func (n *Node) Stop(limit time.Duration) (code int, took time.Duration) {
	n.t.Helper()
	begin := time.Now()
	st := n.stop(syscall.SIGTERM, limit)
	return st.ExitCode(), time.Since(begin)
}

func (n *Node) stop(sig syscall.Signal, limit time.Duration) *os.ProcessState {
	n.t.Helper()
	st, err := n.proc.Stop(sig, limit)
	if errors.Is(err, child.ErrNotRunning) {
		n.t.Fatalf("%s: %v without a live run", n.name, sig)
	}
	if err != nil {
		n.t.Fatalf("%v:\n%s", err, n.Tail())
	}
	n.closeClient()
	return st
}

// WaitExit waits up to d for the live run to exit on its own (or by a
// signal sent through Cmd), ends the run and returns its exit code (-1 for
// death by a signal). It fails the test if there is no live run or it
// outlives d.
func (n *Node) WaitExit(d time.Duration) int {
	n.t.Helper()
	st, err := n.proc.WaitExit(d)
	if errors.Is(err, child.ErrNotRunning) {
		n.t.Fatalf("%s: WaitExit without a live run", n.name)
	}
	if err != nil {
		n.t.Fatalf("%s still running after %v", n.name, d)
	}
	n.closeClient()
	return st.ExitCode()
}

// Pause sends SIGSTOP: the process keeps its sockets but runs nothing. It
// returns once every thread of the process is stopped: kill(2) only queues
// the signal, and on a loaded machine a thread went on running for tens of
// milliseconds after it (a request sent "to the paused node" was appended
// and replicated before the node stopped).
func (n *Node) Pause() {
	n.t.Helper()
	if err := n.proc.Pause(); err != nil {
		n.t.Fatalf("%s: pause: %v", n.name, err)
	}
}

// Resume sends SIGCONT to a paused run.
func (n *Node) Resume() {
	n.t.Helper()
	if err := n.proc.Resume(); err != nil {
		n.t.Fatalf("%s: resume: %v", n.name, err)
	}
}

// cleanup kills a run left live and logs the output's tail on failure.
func (n *Node) cleanup() {
	n.proc.Stop(syscall.SIGKILL, exitTimeout) // ErrNotRunning when none is left
	n.closeClient()
	if n.t.Failed() {
		n.t.Logf("%s output (tail):\n%s", n.name, n.Tail())
	}
}

// lockedBuffer is a bytes.Buffer safe for the exec copiers and the test.
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
