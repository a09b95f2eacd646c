package child

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What the chaos suite relies on beyond internal/proctest's Node tests: a
// log file appended to by every run, a restart after a run exited on its
// own, Terminate, and errors instead of test failures.
func TestLogFileRestartAndTerminate(t *testing.T) {
	log := filepath.Join(t.TempDir(), "kid.log")
	p := New(Config{Name: "kid", Bin: "/bin/sh", Args: []string{"-c", `echo "run of $CHILD_ECHO"; exec sleep 60`},
		Env: []string{"CHILD_ECHO=hello"}, LogPath: log})
	if err := p.Kill(); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Kill before Start = %v, want ErrNotRunning", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err == nil {
		t.Fatal("a second Start while a run is live succeeded")
	}
	pid := p.Pid()
	if pid == 0 || !p.Alive() {
		t.Fatal("no live run after Start")
	}
	waitLines(t, log, 1)
	// A run that dies by a signal from outside is forgotten by the next Start.
	if err := p.Cmd().Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	if err := p.Start(); err != nil {
		t.Fatalf("restart after the run died on its own: %v", err)
	}
	if p.Pid() == pid {
		t.Fatal("the restart kept the old pid")
	}
	waitLines(t, log, 2)
	if err := p.Terminate(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Alive() || p.Cmd() != nil || p.Runs() != 2 {
		t.Fatalf("after Terminate: alive %v, cmd %v, runs %d", p.Alive(), p.Cmd(), p.Runs())
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, want := range []string{"=== kid: run 1: sh -c", "=== kid: run 2: sh -c", "run of hello"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "run of hello"); n != 2 {
		t.Errorf("%d runs wrote to the log, want 2:\n%s", n, out)
	}
}

// waitLines waits up to 10 s for n runs' lines in the log.
func waitLines(t *testing.T, log string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(log)
		if strings.Count(string(b), "run of hello") >= n {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("fewer than %d runs wrote to the log:\n%s", n, b)
		case <-tick.C:
		}
	}
}
