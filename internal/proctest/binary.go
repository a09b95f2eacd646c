package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/shale-io/shale/internal/invariants"
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
	out, err := exec.Command("go", buildArgs(bin)...).CombinedOutput()
	if err != nil {
		t.Fatalf("building shale: %v\n%s", err, out)
	}
	return bin
}

// buildArgs are the go command's arguments to build cmd/shale into bin:
// with the invariant checks when this test binary has them (make test), so
// that child nodes check them too (a broken one panics, which the tests'
// CheckNoPanic reports).
func buildArgs(bin string) []string {
	args := []string{"build", "-o", bin}
	if invariants.Enabled {
		args = append(args, "-tags", "shale_invariants")
	}
	return append(args, "github.com/shale-io/shale/cmd/shale")
}
