package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shale-io/shale/internal/invariants"
)

// The process tests of this package (serve's logs, doctor) run the real
// binary; it is built once, on first use, and removed after the tests.
var processBin struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if processBin.dir != "" {
		os.RemoveAll(processBin.dir)
	}
	os.Exit(code)
}

// shaleBinary returns cmd/shale built once for the process tests ($SHALE_E2E_BIN
// when set), with the invariant checks when this test binary has them.
func shaleBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the shale binary")
	}
	if b := os.Getenv("SHALE_E2E_BIN"); b != "" {
		return b
	}
	processBin.once.Do(func() {
		processBin.dir, processBin.err = os.MkdirTemp("", "shale-cmd-")
		if processBin.err != nil {
			return
		}
		processBin.path = filepath.Join(processBin.dir, "shale")
		args := []string{"build", "-o", processBin.path}
		if invariants.Enabled {
			args = append(args, "-tags", "shale_invariants")
		}
		processBin.out, processBin.err = exec.Command("go", append(args, ".")...).CombinedOutput()
	})
	if processBin.err != nil {
		t.Fatalf("building shale: %v\n%s", processBin.err, processBin.out)
	}
	return processBin.path
}
