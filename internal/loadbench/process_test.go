package loadbench

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// kfakeChildEnv, set, makes this test binary the kfake child StartSelf
// runs (as internal/benchreport's -serve-kfake does).
const kfakeChildEnv = "LOADBENCH_KFAKE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(kfakeChildEnv) != "" {
		cfg := DefaultConfig()
		cfg.Partitions = 2
		if err := ServeKfake(cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// StartSelf runs a real child (this test binary as ServeKfake), reads its
// address past the supervisor's run marker, loads it, and Close stops it.
func TestStartSelfRunsAndStopsTheChild(t *testing.T) {
	t.Setenv(kfakeChildEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := StartSelf(ctx, "-test.run=^$")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pid := p.Pid()
	if pid == 0 || pid == os.Getpid() {
		t.Fatalf("child pid %d", pid)
	}
	cfg := DefaultConfig()
	cfg.Records, cfg.Partitions, cfg.PhaseTimeout = 500, 2, 30*time.Second
	res, err := Run(ctx, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Produce.Records != cfg.Records || res.Consume.Records != cfg.Records {
		t.Fatalf("produced %d, consumed %d, want %d", res.Produce.Records, res.Consume.Records, cfg.Records)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Fatalf("child %d still there after Close (kill 0: %v)", pid, err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
