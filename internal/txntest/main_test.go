package txntest

import (
	"os"
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// shaleBin is the path of the binary built once by TestMain, or the one
// named by SHALE_E2E_BIN; the process tests run it.
var shaleBin string

func TestMain(m *testing.M) {
	os.Exit(proctest.RunWithBinary(m, "txntest", &shaleBin))
}
