package tieringe2e

import (
	"bytes"
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

	"github.com/shale-io/shale/internal/proctest"
)

// childReadyTimeout bounds a start: a node restarted after SIGKILL first
// waits for its old broker registration to expire (--broker-session-timeout).
const childReadyTimeout = 40 * time.Second

// childNode is one `shale serve` child process and its restarts, on one
// data dir with fixed Kafka, admin and embedded NATS addresses. Its output
// across every run is kept in one buffer, each run headed by a marker line.
// Only the test goroutine calls its methods.
type childNode struct {
	t     *testing.T
	bin   string
	args  []string // after the binary
	kafka string   // Kafka address
	admin string   // admin HTTP address
	nats  string   // embedded NATS client address

	out  lockedBuffer
	runs int
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run has exited
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

// newChildNode prepares `shale serve` on dataDir with fresh addresses and
// extra flags; it does not start it. A run still live when the test ends is
// killed, and on failure the output's tail is logged.
func newChildNode(t *testing.T, dataDir string, extra ...string) *childNode {
	t.Helper()
	c := &childNode{t: t, bin: proctest.Binary(t), kafka: freeAddr(t), admin: freeAddr(t), nats: freeAddr(t)}
	c.args = append([]string{"serve", "--data-dir", dataDir, "--listen", c.kafka, "--admin-listen", c.admin,
		"--nats-listen", c.nats}, extra...)
	t.Cleanup(c.cleanup)
	return c
}

// start launches a run; it does not wait for readiness. The child gets the
// test's environment without SHALE_* variables: the AWS_* credentials set
// by startS3 reach its standard AWS chain.
func (c *childNode) start() {
	c.t.Helper()
	if c.cmd != nil {
		c.t.Fatal("childNode: start while a run is live")
	}
	c.runs++
	fmt.Fprintf(&c.out, "=== tieringe2e: run %d: shale %s\n", c.runs, strings.Join(c.args, " "))
	cmd := exec.Command(c.bin, c.args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHALE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "AWS_EC2_METADATA_DISABLED=true")
	cmd.Stdout, cmd.Stderr = &c.out, &c.out
	// If the test binary dies, the kernel kills the node too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting shale: %v", err)
	}
	done := make(chan struct{})
	go func() { // owned by this run; ends when the process exits
		cmd.Wait()
		close(done)
	}()
	c.cmd, c.done = cmd, done
}

// waitReady polls GET /readyz until it answers 200, failing the test if the
// run exits first or childReadyTimeout passes. It returns how long it took.
func (c *childNode) waitReady() time.Duration {
	c.t.Helper()
	begin := time.Now()
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := hc.Get("http://" + c.admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(begin)
			}
		}
		select {
		case <-c.done:
			c.t.Fatalf("shale exited before it was ready:\n%s", c.tail())
		case <-tick.C:
		}
		if time.Since(begin) > childReadyTimeout {
			c.t.Fatalf("shale not ready after %v (last error %v):\n%s", childReadyTimeout, err, c.tail())
		}
	}
}

// kill sends SIGKILL to the live run and waits for its exit.
func (c *childNode) kill() { c.t.Helper(); c.stop(syscall.SIGKILL) }

// terminate sends SIGTERM (a graceful stop) and waits for the exit.
func (c *childNode) terminate() { c.t.Helper(); c.stop(syscall.SIGTERM) }

func (c *childNode) stop(sig syscall.Signal) {
	c.t.Helper()
	if c.cmd == nil {
		c.t.Fatal("childNode: stop without a live run")
	}
	c.cmd.Process.Signal(sig)
	tm := time.NewTimer(30 * time.Second)
	defer tm.Stop()
	select {
	case <-c.done:
	case <-tm.C:
		c.t.Fatalf("shale did not exit within 30s of %v:\n%s", sig, c.tail())
	}
	c.cmd, c.done = nil, nil
}

// cleanup kills a run left live by a failed test and logs the output's tail
// on failure.
func (c *childNode) cleanup() {
	if c.cmd != nil {
		c.cmd.Process.Signal(syscall.SIGKILL)
		<-c.done
	}
	if c.t.Failed() {
		c.t.Logf("shale output (tail):\n%s", c.tail())
	}
}

// tail is the end of the captured output.
func (c *childNode) tail() string {
	s := c.out.String()
	const max = 12 << 10
	if len(s) > max {
		s = "...\n" + s[len(s)-max:]
	}
	return s
}

// logLines returns the parsed slog lines of every run whose msg is msg.
func (c *childNode) logLines(msg string) []map[string]string {
	var out []map[string]string
	for line := range strings.SplitSeq(c.out.String(), "\n") {
		if !strings.Contains(line, msg) {
			continue
		}
		if kv := proctest.ParseLogfmt(line); kv["msg"] == msg {
			out = append(out, kv)
		}
	}
	return out
}

// checkNoPanic fails the test if any run printed a Go panic or fatal error.
func (c *childNode) checkNoPanic() {
	c.t.Helper()
	s := c.out.String()
	for _, bad := range []string{"panic:", "fatal error:", "DATA RACE"} {
		if i := strings.Index(s, bad); i >= 0 {
			c.t.Fatalf("shale output contains %q:\n%s", bad, s[max(0, i-2000):min(len(s), i+4000)])
		}
	}
}
