// Package child supervises one child process and its restarts, without
// package testing: errors are returned. It is the one supervisor under
// Shale's harnesses: internal/proctest.Node wraps it for tests (failing the
// test on an error), the shipped chaos suite (chaos, cmd/shale-chaos) runs
// its nodes, NATS servers and S3 server with it, and internal/loadbench its
// benchmark servers.
//
// It imports no Shale package but internal/procstat.
package child

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shale-io/shale/internal/procstat"
)

// ErrNotRunning is returned by a signal, stop or wait on a Process with no
// live run.
var ErrNotRunning = errors.New("child: process not running")

// KillTimeout bounds the wait for a run to exit after SIGKILL (Kill, and
// Terminate's fallback).
const KillTimeout = 30 * time.Second

// pauseTimeout bounds Pause's wait for every thread to stop.
const pauseTimeout = 10 * time.Second

// Config is what a Process runs and where its output goes.
type Config struct {
	// Name names the process in its run markers and errors.
	Name string
	// Bin and Args are the command; every run has the same.
	Bin  string
	Args []string
	// Label is the command's word in the run markers; default the base
	// name of Bin.
	Label string
	// Env is added to ChildEnv (so these win over the parent's).
	Env []string
	// Gid, if not 0, runs the child with this group id (for iptables
	// owner rules); the user id stays ours.
	Gid uint32
	// Output receives stdout and stderr of every run, each run headed by
	// the line "=== <name>: run <n>: <label> <args> (at <time>)". If
	// LogPath is set instead, each run opens it for appending and closes
	// it at its exit. With neither, the output is discarded.
	Output  io.Writer
	LogPath string
	// Stderr, if set, receives stderr instead of Output.
	Stderr io.Writer
	// Stdin, if set, is the child's standard input.
	Stdin io.Reader
}

// Process is one child process and its restarts: every Start is a new run
// with the same Config. The kernel kills a run if the parent dies
// (Pdeathsig). Its methods are safe to call from any goroutine; Start,
// Stop, Kill, Terminate and WaitExit are meant for one at a time.
type Process struct {
	cfg Config

	mu struct {
		sync.Mutex
		runs   int
		cmd    *exec.Cmd
		done   chan struct{} // closed when the current run has exited
		paused bool          // between Pause and Resume of the current run
	}
}

// New prepares a process; nothing runs until Start.
func New(cfg Config) *Process {
	if cfg.Label == "" {
		cfg.Label = filepath.Base(cfg.Bin)
	}
	return &Process{cfg: cfg}
}

// Name is Config.Name.
func (p *Process) Name() string { return p.cfg.Name }

// Args returns a copy of the arguments after the binary.
func (p *Process) Args() []string { return append([]string(nil), p.cfg.Args...) }

// ChildEnv is the parent's environment without SHALE_* variables (so that a
// developer's own settings do not reach a child), plus extra.
func ChildEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SHALE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// Start launches a run without waiting for readiness. A run that exited
// on its own is forgotten first; starting while a run is live is an error.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd != nil {
		select {
		case <-p.mu.done:
			p.mu.cmd, p.mu.done, p.mu.paused = nil, nil, false
		default:
			return fmt.Errorf("%s: start while a run is live", p.cfg.Name)
		}
	}
	out, closeOut := p.cfg.Output, func() {}
	if p.cfg.LogPath != "" {
		f, err := os.OpenFile(p.cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		out, closeOut = f, func() { f.Close() }
	}
	if out == nil {
		out = io.Discard
	}
	p.mu.runs++
	fmt.Fprintf(out, "=== %s: run %d: %s %s (at %s)\n", p.cfg.Name, p.mu.runs, p.cfg.Label, strings.Join(p.cfg.Args, " "),
		time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(p.cfg.Bin, p.cfg.Args...)
	cmd.Env = ChildEnv(p.cfg.Env...)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = out, out, p.cfg.Stdin
	if p.cfg.Stderr != nil {
		cmd.Stderr = p.cfg.Stderr
	}
	// If the parent dies, the kernel kills the child too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.cfg.Gid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(os.Getuid()), Gid: p.cfg.Gid, NoSetGroups: true}
	}
	if err := cmd.Start(); err != nil {
		closeOut()
		return fmt.Errorf("%s: starting %s: %w", p.cfg.Name, p.cfg.Bin, err)
	}
	done := make(chan struct{})
	p.mu.cmd, p.mu.done, p.mu.paused = cmd, done, false
	go func() { // owned by this run; ends when the process exits
		cmd.Wait()
		closeOut()
		close(done)
	}()
	return nil
}

// current returns the run's command and exit channel (nil, nil between
// runs).
func (p *Process) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.cmd, p.mu.done
}

// end forgets the run of cmd (if it is still the current one).
func (p *Process) end(cmd *exec.Cmd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.cmd == cmd {
		p.mu.cmd, p.mu.done, p.mu.paused = nil, nil, false
	}
}

// Cmd returns the current run's command, or nil between runs (before
// Start, after Stop, Kill, Terminate or WaitExit). The caller may read it
// (Process.Pid, and ProcessState once Exited is closed) and signal its
// Process, but must not Start or Wait it.
func (p *Process) Cmd() *exec.Cmd {
	cmd, _ := p.current()
	return cmd
}

// Runs is how many times Start has launched the process.
func (p *Process) Runs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.runs
}

// Alive reports whether a run is live (started, not yet exited).
func (p *Process) Alive() bool {
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

// Exited returns a channel closed when the current run exits (nil between
// runs).
func (p *Process) Exited() <-chan struct{} {
	_, done := p.current()
	return done
}

// Pid is the current run's pid, or 0.
func (p *Process) Pid() int {
	if cmd := p.Cmd(); cmd != nil {
		return cmd.Process.Pid
	}
	return 0
}

// Kill sends SIGKILL (kill -9) and waits up to KillTimeout for the exit.
func (p *Process) Kill() error {
	_, err := p.Stop(syscall.SIGKILL, KillTimeout)
	return err
}

// Terminate sends SIGTERM and waits up to limit, then kills.
func (p *Process) Terminate(limit time.Duration) error {
	_, err := p.Stop(syscall.SIGTERM, limit)
	if err != nil && !errors.Is(err, ErrNotRunning) {
		return p.Kill()
	}
	return err
}

// Stop sends sig to the current run (a stopped one gets SIGCONT first when
// sig is SIGKILL), waits up to limit for its exit, ends the run and returns
// its state.
func (p *Process) Stop(sig syscall.Signal, limit time.Duration) (*os.ProcessState, error) {
	cmd, done := p.current()
	if cmd == nil {
		return nil, ErrNotRunning
	}
	if sig == syscall.SIGKILL {
		cmd.Process.Signal(syscall.SIGCONT)
	}
	cmd.Process.Signal(sig)
	return p.wait(cmd, done, limit, fmt.Sprintf("of %v", sig))
}

// WaitExit waits up to d for the current run to exit on its own (or by a
// signal sent through Cmd), ends the run and returns its state.
func (p *Process) WaitExit(d time.Duration) (*os.ProcessState, error) {
	cmd, done := p.current()
	if cmd == nil {
		return nil, ErrNotRunning
	}
	return p.wait(cmd, done, d, "")
}

func (p *Process) wait(cmd *exec.Cmd, done chan struct{}, limit time.Duration, of string) (*os.ProcessState, error) {
	tm := time.NewTimer(limit)
	defer tm.Stop()
	select {
	case <-done:
	case <-tm.C:
		return nil, fmt.Errorf("%s did not exit within %v %s", p.cfg.Name, limit, of)
	}
	p.end(cmd)
	return cmd.ProcessState, nil
}

// Pause sends SIGSTOP: the process keeps its sockets but runs nothing. It
// returns once every thread is stopped (/proc/PID/task/*/stat): kill(2)
// only queues the signal, and on a loaded machine a thread went on running
// for tens of milliseconds after it.
func (p *Process) Pause() error {
	cmd, _ := p.current()
	if cmd == nil {
		return ErrNotRunning
	}
	if err := p.signal(cmd, syscall.SIGSTOP, true); err != nil {
		return err
	}
	deadline := time.Now().Add(pauseTimeout)
	for !procstat.AllThreadsStopped(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not stopped %v after SIGSTOP", p.cfg.Name, pauseTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Resume sends SIGCONT to a paused run.
func (p *Process) Resume() error {
	cmd, _ := p.current()
	if cmd == nil {
		return ErrNotRunning
	}
	return p.signal(cmd, syscall.SIGCONT, false)
}

func (p *Process) signal(cmd *exec.Cmd, sig syscall.Signal, paused bool) error {
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: %v: %w", p.cfg.Name, sig, err)
	}
	p.mu.Lock()
	if p.mu.cmd == cmd {
		p.mu.paused = paused
	}
	p.mu.Unlock()
	return nil
}

// Paused reports whether the current run is stopped by Pause.
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.paused
}
