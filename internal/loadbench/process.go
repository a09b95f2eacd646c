package loadbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/freeport"
	"github.com/shale-io/shale/internal/procstat"
	"github.com/shale-io/shale/internal/proctest/child"
)

// ErrNotReady is returned when a child server did not accept the topic
// before the start deadline.
var ErrNotReady = errors.New("loadbench: server not ready")

// Process is a server running as a child process (a child.Process, the
// harnesses' one supervisor). Close stops it; it is safe to call more than
// once.
type Process struct {
	proc  *child.Process
	addr  string
	stdin io.Closer // the write end of the child's stdin, if it has one
	// SASLSSL is the node's SASL_SSL listener, when started WithSASLSSL.
	SASLSSL *SASLSSL
	// AdminAddr is a Shale node's admin HTTP address (metrics, pprof).
	AdminAddr string
}

// Addr is the Kafka address of the child.
func (p *Process) Addr() string { return p.addr }

// Pid is the child's process id (0 once it has stopped).
func (p *Process) Pid() int { return p.proc.Pid() }

// CPUTime reads utime+stime of the child from /proc/<pid>/stat. Threads are
// included; children of the child are not (neither server starts any).
func (p *Process) CPUTime() (time.Duration, error) {
	return procCPU(p.proc.Pid())
}

// Close stops the child (SIGTERM, then SIGKILL after 15 s) and waits for it.
func (p *Process) Close() error {
	if p.stdin != nil {
		p.stdin.Close()
	}
	if err := p.proc.Terminate(15 * time.Second); err != nil && !errors.Is(err, child.ErrNotRunning) {
		return err
	}
	return nil
}

// exited reports whether the child has exited, and how.
func (p *Process) exited() (string, bool) {
	cmd := p.proc.Cmd()
	if cmd == nil {
		return "stopped", true
	}
	select {
	case <-p.proc.Exited():
		return cmd.ProcessState.String(), true
	default:
		return "", false
	}
}

func procCPU(pid int) (time.Duration, error) {
	st, err := procstat.Read(pid)
	return st.CPU, err
}

// StartShale runs `bin serve` on loopback ports with its data under dir and
// a log file dir/shale.log, creates cfg's topic, and returns once the topic
// accepts metadata requests with a leader for every partition.
func StartShale(ctx context.Context, bin, dir string, cfg Config, opts ...ShaleOption) (*Process, error) {
	var so shaleOptions
	for _, o := range opts {
		o(&so)
	}
	var ports [4]int
	for i := range ports {
		p, err := freeport.Port()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	args := []string{"serve",
		"--data-dir", dir + "/data",
		"--listen", addr,
		"--admin-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--nats-listen", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"--log-level", "warn",
	}
	args = append(args, so.args...)
	var sec *SASLSSL
	if so.saslSSL {
		var err error
		if sec, err = newSASLSSL(dir, fmt.Sprintf("127.0.0.1:%d", ports[3])); err != nil {
			return nil, err
		}
		args = append(args, sec.serveArgs(addr)...)
	}
	p := &Process{proc: child.New(child.Config{Name: "shale", Bin: bin, Args: args, LogPath: dir + "/shale.log"}),
		addr: addr, AdminAddr: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	if err := p.proc.Start(); err != nil {
		return nil, err
	}
	if err := createTopic(ctx, p, cfg); err != nil {
		p.Close()
		return nil, fmt.Errorf("%w; last lines of the server log:\n%s", err, logTail(dir+"/shale.log", 2048))
	}
	if sec != nil {
		if err := sec.createUser(ctx, addr); err != nil {
			p.Close()
			return nil, err
		}
		p.SASLSSL = sec
	}
	return p, nil
}

// logTail returns up to the last n bytes of the file at path, or a note
// saying why it could not be read.
func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return err.Error()
	}
	return string(b)
}

// createTopic creates the topic (tolerating "already exists") and waits until
// every partition has a leader, retrying until a 90 s deadline.
func createTopic(ctx context.Context, p *Process, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last error
	for ctx.Err() == nil {
		if how, ok := p.exited(); ok {
			return fmt.Errorf("%w: server exited: %s", ErrNotReady, how)
		}
		last = tryCreate(ctx, adm, cfg)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w: %v", ErrNotReady, last)
}

func tryCreate(ctx context.Context, adm *kadm.Client, cfg Config) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(rctx, cfg.Partitions, 1, nil, cfg.Topic)
	if err != nil && !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") {
		return err
	}
	if resp.Err != nil && !strings.Contains(resp.Err.Error(), "TOPIC_ALREADY_EXISTS") {
		return resp.Err
	}
	md, err := adm.Metadata(rctx, cfg.Topic)
	if err != nil {
		return err
	}
	t, ok := md.Topics[cfg.Topic]
	if !ok || t.Err != nil || int32(len(t.Partitions)) != cfg.Partitions {
		return fmt.Errorf("topic %s not ready: %+v", cfg.Topic, t)
	}
	for _, pd := range t.Partitions {
		if pd.Err != nil || pd.Leader < 0 {
			return fmt.Errorf("partition %d has no leader: %v", pd.Partition, pd.Err)
		}
	}
	return nil
}

// StartSelf runs the current executable with args, expecting it to call
// ServeKfake: it reads the address the child prints on its first stdout line
// (after the supervisor's run marker).
// The child stops when its stdin is closed (by Close) or on SIGTERM.
func StartSelf(ctx context.Context, args ...string) (*Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	in, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// The reader runs from the start: the supervisor writes its run marker
	// to stdout before the child starts. It ends at the child's exit.
	out, stdout := io.Pipe()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line := sc.Text(); !strings.HasPrefix(line, "=== ") { // not the run marker
				lines <- line
				break
			}
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	p := &Process{stdin: stdin, proc: child.New(child.Config{Name: "kfake", Bin: exe, Args: args,
		Output: stdout, Stderr: os.Stderr, Stdin: in})}
	err = p.proc.Start()
	in.Close() // the child has its own copy
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, err
	}
	exited := p.proc.Exited()
	go func() { // ends when the child has exited and its stdout is copied
		<-exited
		stdout.Close()
	}()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case line, ok := <-lines:
		addr, found := strings.CutPrefix(line, "addr ")
		if !ok || !found {
			p.Close()
			return nil, fmt.Errorf("%w: child printed %q", ErrNotReady, line)
		}
		p.addr = addr
	case <-ctx.Done():
		p.Close()
		return nil, fmt.Errorf("%w: no address from child", ErrNotReady)
	}
	return p, nil
}
