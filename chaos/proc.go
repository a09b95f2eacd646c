package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shale-io/shale/internal/procstat"
)

// errNotRunning: a signal or wait on a Proc with no live run.
var errNotRunning = errors.New("chaos: process not running")

// Proc is one child process of the suite and its restarts: every Start is a
// new run with the same binary, arguments and environment. Its output, all
// runs, goes to one log file, each run headed by a "=== name: run n" line.
// The kernel kills it if the suite dies (Pdeathsig). It is what
// internal/proctest.Node is for tests, without package testing: errors are
// returned.
type Proc struct {
	Name string
	bin  string
	args []string
	env  []string
	log  string
	gid  uint32 // run with this group id (for iptables owner rules); 0 keeps ours

	mu struct {
		sync.Mutex
		runs   int
		cmd    *exec.Cmd
		done   chan struct{}
		paused bool
	}
}

// NewProc prepares a process; nothing runs until Start.
func NewProc(name, bin string, args, env []string, logPath string) *Proc {
	return &Proc{Name: name, bin: bin, args: args, env: env, log: logPath}
}

// Start launches a run without waiting for readiness.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd != nil {
		select {
		case <-p.mu.done: // exited on its own: forget it
			p.mu.cmd, p.mu.done, p.mu.paused = nil, nil, false
		default:
			return fmt.Errorf("%s: start while a run is live", p.Name)
		}
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.mu.runs++
	fmt.Fprintf(f, "=== %s: run %d at %s: %s %s\n", p.Name, p.mu.runs, time.Now().UTC().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(childEnv(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.gid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(os.Getuid()), Gid: p.gid, NoSetGroups: true}
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.cmd, p.mu.done, p.mu.paused = cmd, done, false
	go func() { // owned by this run; ends when the process exits
		cmd.Wait()
		f.Close()
		close(done)
	}()
	return nil
}

// childEnv is our environment without SHALE_* variables.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHALE_") {
			env = append(env, kv)
		}
	}
	return env
}

func (p *Proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.cmd, p.mu.done
}

// Alive reports whether a run is live.
func (p *Proc) Alive() bool {
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

// Exited returns a channel closed when the live run exits (nil between
// runs).
func (p *Proc) Exited() <-chan struct{} {
	_, done := p.current()
	return done
}

// Pid is the live run's pid, or 0.
func (p *Proc) Pid() int {
	cmd, _ := p.current()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

// Kill sends SIGKILL (kill -9) and waits up to 30 s for the exit.
func (p *Proc) Kill() error { return p.stop(syscall.SIGKILL, 30*time.Second) }

// Terminate sends SIGTERM and waits up to limit, then SIGKILL.
func (p *Proc) Terminate(limit time.Duration) error {
	if err := p.stop(syscall.SIGTERM, limit); err != nil {
		return p.stop(syscall.SIGKILL, 30*time.Second)
	}
	return nil
}

func (p *Proc) stop(sig syscall.Signal, limit time.Duration) error {
	cmd, done := p.current()
	if cmd == nil {
		return errNotRunning
	}
	if sig == syscall.SIGKILL {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	cmd.Process.Signal(sig)
	tm := time.NewTimer(limit)
	defer tm.Stop()
	select {
	case <-done:
	case <-tm.C:
		return fmt.Errorf("%s did not exit within %v of %v", p.Name, limit, sig)
	}
	p.mu.Lock()
	p.mu.cmd, p.mu.done, p.mu.paused = nil, nil, false
	p.mu.Unlock()
	return nil
}

// Pause sends SIGSTOP and returns once every thread is stopped
// (/proc/PID/task/*/stat): kill(2) only queues the signal.
func (p *Proc) Pause() error {
	cmd, _ := p.current()
	if cmd == nil {
		return errNotRunning
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.mu.Lock()
	p.mu.paused = true
	p.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for !procstat.AllThreadsStopped(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not stopped 10 s after SIGSTOP", p.Name)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Resume sends SIGCONT.
func (p *Proc) Resume() error {
	cmd, _ := p.current()
	if cmd == nil {
		return errNotRunning
	}
	p.mu.Lock()
	p.mu.paused = false
	p.mu.Unlock()
	return cmd.Process.Signal(syscall.SIGCONT)
}

// Paused reports whether the live run is stopped by Pause.
func (p *Proc) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.paused
}

// poll calls cond every interval until it returns true or d passes.
func poll(d, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}
