package replicationtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// shaleBin is the path of the binary built once by TestMain, or the one
// named by SHALE_E2E_BIN.
var shaleBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	if bin := os.Getenv("SHALE_E2E_BIN"); bin != "" {
		shaleBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "shale-replicationtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "replicationtest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	shaleBin = filepath.Join(dir, "shale")
	cmd := exec.Command("go", "build", "-o", shaleBin, "github.com/shale-io/shale/cmd/shale")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "replicationtest: building shale:", err)
		return 1
	}
	return m.Run()
}
