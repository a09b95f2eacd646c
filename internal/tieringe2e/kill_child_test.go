package tieringe2e

import (
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// childNode is one `shale serve` child process and its restarts, on one
// data dir with fixed Kafka, admin and embedded NATS addresses.
type childNode struct {
	*proctest.Node
	nats string // embedded NATS client address
}

// newChildNode prepares `shale serve` on dataDir with fresh addresses and
// extra flags; it does not start it. The child gets the test's environment
// without SHALE_* variables: the AWS_* credentials set by startS3 reach its
// standard AWS chain.
func newChildNode(t *testing.T, dataDir string, extra ...string) *childNode {
	t.Helper()
	nats := proctest.FreeAddr(t)
	return &childNode{nats: nats, Node: proctest.Serve(t, proctest.Binary(t), dataDir,
		append([]string{"--nats-listen", nats}, extra...),
		proctest.Name("tieringe2e"), proctest.Env("AWS_EC2_METADATA_DISABLED=true"))}
}
