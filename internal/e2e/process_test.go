package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyTimeout bounds a start: after a SIGKILL the node waits for its old
// broker registration to expire (TTL 6 s, retried for up to 15 s), so a
// restart can legitimately take that long on a loaded machine.
const readyTimeout = 40 * time.Second

// proc is one shale process (and its restarts) run by a test. Its stderr
// across every run is kept in one buffer, each run headed by a marker line.
type proc struct {
	t     *testing.T
	args  []string // after "shale"
	env   []string // added to the filtered environment
	kafka string   // Kafka address the test expects the node on
	admin string   // admin HTTP address

	stderr lockedBuffer
	runs   int

	mu struct {
		sync.Mutex
		cmd  *exec.Cmd
		done chan struct{} // closed when the current run has exited
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
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// newNode returns a proc for `shale serve` on dataDir with fresh Kafka and
// admin ports (kept across restarts) and a random embedded NATS port.
func newNode(t *testing.T, dataDir string, extra ...string) *proc {
	p := &proc{t: t, kafka: freeAddr(t), admin: freeAddr(t)}
	p.args = append([]string{"serve",
		"--data-dir", dataDir,
		"--listen", p.kafka,
		"--admin-listen", p.admin,
		"--nats-listen", "127.0.0.1:-1",
	}, extra...)
	t.Cleanup(p.cleanup)
	return p
}

// childEnv is the test's environment without SHALE_* variables, plus extra.
func childEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHALE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// start launches a run of the process; it does not wait for readiness.
func (p *proc) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd != nil {
		p.t.Fatal("e2e: start while a run is live")
	}
	p.runs++
	fmt.Fprintf(&p.stderr, "=== e2e: run %d: shale %s\n", p.runs, strings.Join(p.args, " "))
	cmd := exec.Command(shaleBin, p.args...)
	cmd.Env = childEnv(p.env)
	cmd.Stderr = &p.stderr
	cmd.Stdout = &p.stderr
	// If the test binary dies, the kernel kills the node too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("starting shale: %v", err)
	}
	done := make(chan struct{})
	p.mu.cmd, p.mu.done = cmd, done
	go func() { // owned by this run; ends when the process exits
		cmd.Wait()
		close(done)
	}()
}

// current returns the live run's command and exit channel.
func (p *proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.cmd, p.mu.done
}

// alive reports whether the current run has not exited.
func (p *proc) alive() bool {
	_, done := p.current()
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

// waitReady polls GET /readyz until it answers 200, failing the test if the
// process exits first or readyTimeout passes. It returns how long it took.
func (p *proc) waitReady() time.Duration {
	p.t.Helper()
	_, done := p.current()
	begin := time.Now()
	deadline := begin.Add(readyTimeout)
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := hc.Get("http://" + p.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(begin)
			}
		}
		select {
		case <-done:
			p.t.Fatalf("shale exited before it was ready:\n%s", p.tail())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("shale not ready after %v (last error %v):\n%s", readyTimeout, err, p.tail())
		}
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	p.t.Helper()
	cmd, done := p.current()
	if cmd == nil {
		p.t.Fatal("e2e: kill without a live run")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.t.Fatal("shale did not die within 30s of SIGKILL")
	}
	p.clear()
}

// armKill makes the stream SIGKILL the current run from inside the promise
// of its at-th acknowledged record.
func (p *proc) armKill(s *stream, at int64) {
	cmd, _ := p.current()
	if cmd == nil {
		p.t.Fatal("e2e: armKill without a live run")
	}
	s.onAcked(at, func() { cmd.Process.Signal(syscall.SIGKILL) })
}

// waitExit waits up to d for the current run to exit on its own.
func (p *proc) waitExit(d time.Duration) {
	p.t.Helper()
	_, done := p.current()
	select {
	case <-done:
	case <-time.After(d):
		p.t.Fatalf("shale still running after %v", d)
	}
}

// terminate sends SIGTERM and waits up to limit for the exit. It returns the
// exit code (-1 for death by a signal) and how long the stop took.
func (p *proc) terminate(limit time.Duration) (int, time.Duration) {
	p.t.Helper()
	cmd, done := p.current()
	if cmd == nil {
		p.t.Fatal("e2e: terminate without a live run")
	}
	begin := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(limit):
		p.t.Fatalf("shale did not exit within %v of SIGTERM:\n%s", limit, p.tail())
	}
	took := time.Since(begin)
	p.clear()
	return cmd.ProcessState.ExitCode(), took
}

func (p *proc) clear() {
	p.mu.Lock()
	p.mu.cmd, p.mu.done = nil, nil
	p.mu.Unlock()
}

// cleanup kills a run left live by a failed test and logs stderr on failure.
func (p *proc) cleanup() {
	if cmd, done := p.current(); cmd != nil {
		cmd.Process.Signal(syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}
	if p.t.Failed() {
		p.t.Logf("shale stderr (tail):\n%s", p.tail())
	}
}

// tail is the end of the captured stderr.
func (p *proc) tail() string {
	s := p.stderr.String()
	const max = 8 << 10
	if len(s) > max {
		s = "...\n" + s[len(s)-max:]
	}
	return s
}

// checkNoPanic fails the test if the captured stderr shows a Go panic or a
// fatal runtime error in any run.
func (p *proc) checkNoPanic() {
	p.t.Helper()
	s := p.stderr.String()
	for _, bad := range []string{"panic:", "panicked", "fatal error:", "goroutine 1 [", "DATA RACE"} {
		if i := strings.Index(s, bad); i >= 0 {
			lo := max(0, i-2000)
			hi := min(len(s), i+4000)
			p.t.Fatalf("shale stderr contains %q:\n%s", bad, s[lo:hi])
		}
	}
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
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
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
