package restoretest

import (
	"os"
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// shaleBin is the binary built once by TestMain (or SHALE_E2E_BIN).
var shaleBin string

func TestMain(m *testing.M) {
	os.Exit(proctest.RunWithBinary(m, "restoretest", &shaleBin))
}
