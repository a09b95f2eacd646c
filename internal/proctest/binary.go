package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binary returns the path of a shale binary for one test that starts child
// nodes in a package without RunWithBinary's TestMain (where only a few
// tests need it, so that the others do not pay for the build):
// $SHALE_E2E_BIN when set, else cmd/shale built into the test's TempDir,
// removed when the test ends. A failed build fails the test.
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("SHALE_E2E_BIN"); b != "" {
		return b
	}
	bin := filepath.Join(t.TempDir(), "shale")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/shale-io/shale/cmd/shale").CombinedOutput()
	if err != nil {
		t.Fatalf("building shale: %v\n%s", err, out)
	}
	return bin
}
