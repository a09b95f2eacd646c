package clustertest

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// node is one shale broker (id fixed, ports and data dir kept across its
// runs) run by a test as a child process.
type node struct {
	*proctest.Node
	id int32
}

// newNode returns node id of a cluster on the NATS URLs natsURLs
// (comma-separated), with its data dir under dir, fresh Kafka and admin
// ports, a 2 s broker session and controller lease, and extra flags.
func newNode(t *testing.T, dir string, id int32, natsURLs string, extra ...string) *node {
	return &node{id: id, Node: proctest.Serve(t, shaleBin, filepath.Join(dir, fmt.Sprintf("node-%d", id)), append([]string{
		"--node-id", fmt.Sprint(id),
		"--nats", natsURLs,
		"--broker-session-timeout", "2s",
		"--controller-lease", "2s",
	}, extra...), proctest.Name(fmt.Sprintf("clustertest node %d", id)))}
}
