package groupstest

import (
	"os"
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// shaleBin is the path of the binary built once by TestMain, or the one
// named by SHALE_E2E_BIN.
var shaleBin string

func TestMain(m *testing.M) {
	os.Exit(proctest.RunWithBinary(m, "groupstest", &shaleBin))
}
