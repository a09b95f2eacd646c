package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// S3 test server credentials and region.
const (
	AccessKey = "shaletestaccess"
	SecretKey = "shaletestsecret0123456789"
	Region    = "us-east-1"
)

// S3Server is a versitygw process serving a posix directory over S3 on
// 127.0.0.1, started by StartS3Server and stopped when the test ends.
type S3Server struct {
	// Endpoint is the server's URL, e.g. http://127.0.0.1:40123.
	Endpoint string
	// Dir is the posix root: each subdirectory is a bucket.
	Dir string

	mu        sync.Mutex
	next      int
	bin       string
	addr      string
	cert, key string // TLS files, "" for plain HTTP
	stop      func() // kills the running process; nil while stopped
	pid       int    // the running process's; 0 while stopped
}

// Pid is the running server process's id (for a benchmark that measures
// its CPU), 0 while stopped.
func (s *S3Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// VersityGWPath finds the versitygw binary: $SHALE_VERSITYGW, then bin/ at
// the module root (where `make tools` installs it), then $PATH.
func VersityGWPath() (string, error) {
	if p := os.Getenv("SHALE_VERSITYGW"); p != "" {
		_, err := os.Stat(p)
		return p, err
	}
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, "bin", "versitygw")
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return exec.LookPath("versitygw")
}

// StartS3Server starts versitygw for the test. Without the binary the test
// fails, telling to run `make tools`, unless SHALE_SKIP_S3=1, which skips it.
func StartS3Server(t testing.TB) *S3Server {
	t.Helper()
	return startS3Server(t, "", "")
}

// StartS3ServerTLS is StartS3Server serving HTTPS with the PEM files
// certFile and keyFile (Endpoint is https://...).
func StartS3ServerTLS(t testing.TB, certFile, keyFile string) *S3Server {
	t.Helper()
	return startS3Server(t, certFile, keyFile)
}

func startS3Server(t testing.TB, certFile, keyFile string) *S3Server {
	t.Helper()
	bin, err := VersityGWPath()
	if err != nil {
		if os.Getenv("SHALE_SKIP_S3") == "1" {
			t.Skipf("versitygw not found and SHALE_SKIP_S3=1: skipping the S3 tests (%v)", err)
		}
		t.Fatalf("versitygw not found (%v): run `make tools` to install it into ./bin, or set SHALE_SKIP_S3=1 to skip the S3 tests", err)
	}
	dir := t.TempDir()
	var lastErr error
	for range 3 { // the free port can be taken between probe and bind
		s, err := startVersity(t, bin, dir, certFile, keyFile)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("start versitygw: %v", lastErr)
	return nil
}

func startVersity(t testing.TB, bin, dir, certFile, keyFile string) (*S3Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	s := &S3Server{Endpoint: "http://" + addr, Dir: dir, bin: bin, addr: addr, cert: certFile, key: keyFile}
	if certFile != "" {
		s.Endpoint = "https://" + addr
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	t.Cleanup(s.Stop)
	return s, nil
}

// run starts the process on s.addr and waits until it listens.
func (s *S3Server) run() error {
	var out bytes.Buffer
	args := []string{"--access", AccessKey, "--secret", SecretKey, "--region", Region, "--port", s.addr, "--quiet"}
	if s.cert != "" {
		args = append(args, "--cert", s.cert, "--key", s.key)
	}
	cmd := exec.Command(s.bin, append(args, "posix", s.Dir)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("versitygw exited: %v: %s", err, out.String())
		default:
		}
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return fmt.Errorf("versitygw did not listen on %s within 30s: %s", s.addr, out.String())
		}
		select { // poll, but wake at once if the process dies
		case err := <-exited:
			return fmt.Errorf("versitygw exited: %v: %s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.mu.Lock()
	s.stop, s.pid = stop, cmd.Process.Pid
	s.mu.Unlock()
	return nil
}

// Stop kills the server process (an S3 outage: connections are refused)
// and waits for it to exit. Idempotent; the data stays in Dir.
func (s *S3Server) Stop() {
	s.mu.Lock()
	stop := s.stop
	s.stop, s.pid = nil, 0
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Restart starts a stopped server again on the same address and Dir, and
// returns once it listens (the port can be taken meanwhile: then it fails
// the test).
func (s *S3Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	var err error
	for range 3 {
		if err = s.run(); err == nil {
			return
		}
	}
	t.Fatalf("restart versitygw on %s: %v", s.addr, err)
}

// CreateBucket makes a bucket by creating its directory under the posix
// root and returns its name; each call gives a new, empty bucket.
func (s *S3Server) CreateBucket(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.next++
	name := fmt.Sprintf("shale-test-%03d", s.next)
	s.mu.Unlock()
	if err := os.Mkdir(filepath.Join(s.Dir, name), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// Ctx returns a context for setup calls in tests.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
