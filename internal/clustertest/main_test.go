package clustertest

import (
	"os"
	"testing"

	"github.com/shale-io/shale/chaos"
	"github.com/shale-io/shale/internal/proctest"
)

// shaleBin is the path of the binary built once by TestMain, or the one
// named by SHALE_E2E_BIN.
var shaleBin string

func TestMain(m *testing.M) {
	chaos.MaybeRunChild() // the NATS servers of natsProcs
	os.Exit(proctest.RunWithBinary(m, "clustertest", &shaleBin))
}
