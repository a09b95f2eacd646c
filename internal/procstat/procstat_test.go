package procstat

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	// Field 2 holds spaces and a ')' to check that counting starts after the last one.
	st, err := Parse("1234 (my )prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 99 1000 200 18446744073709551615")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'S' || st.CPU != 3250*time.Millisecond || st.System != 750*time.Millisecond {
		t.Fatalf("got state %q cpu %v system %v, want 'S', 3.25s (250+75 ticks) and 0.75s (75 ticks)", st.State, st.CPU, st.System)
	}
	for _, bad := range []string{"1234 (x) S 1 2", "garbage", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 u 7 0"} {
		if _, err := Parse(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestReadSelf(t *testing.T) {
	// Burn a little CPU so that at least one tick is charged to this process.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := Read(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if Stopped(st.State) {
			t.Fatalf("state %q while running", st.State)
		}
		if st.CPU > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no CPU time charged to this process after 5 s of spinning")
		}
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
	}
}

func TestAllThreadsStopped(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	if AllThreadsStopped(pid) {
		t.Fatal("a sleeping process reported stopped")
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !AllThreadsStopped(pid) {
		if time.Now().After(deadline) {
			t.Fatal("not stopped 10 s after SIGSTOP")
		}
		<-tick.C
	}
	if AllThreadsStopped(-1) {
		t.Fatal("no such process reported stopped")
	}
}
