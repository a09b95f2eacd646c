package replicationtest

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/shale-io/shale/internal/proctest"
)

// node is one shale broker (id fixed, ports and data dir kept across its
// runs) run by a test as a child process.
type node struct {
	*proctest.Node
	id     int32
	cutOff atomic.Bool // its control plane is cut (proctest.Proxy); its views are stale
}

// newNodeEnv returns node id of a cluster on the NATS URLs natsURLs
// (comma-separated), with its data dir under dir, fresh Kafka and admin
// ports, a 2 s broker session and controller lease, a 3 s replica.lag.time.max,
// env (KEY=value pairs, fault-injection hooks) added to its environment,
// and extra flags.
func newNodeEnv(t testing.TB, dir string, id int32, natsURLs string, env []string, extra ...string) *node {
	pn := proctest.Serve(t, shaleBin, filepath.Join(dir, fmt.Sprintf("node-%d", id)), append([]string{
		"--node-id", fmt.Sprint(id),
		"--nats", natsURLs,
		"--broker-session-timeout", "2s",
		"--controller-lease", "2s",
		"--replica-lag-time-max", "3s",
	}, extra...), proctest.Name(fmt.Sprintf("replicationtest node %d", id)), proctest.Env(env...))
	return &node{Node: pn, id: id}
}

// partitionDir is the directory of one partition's log on this node.
func (n *node) partitionDir(topic string, p int32) string {
	return filepath.Join(n.DataDir(), "logs", fmt.Sprintf("%s-%d", topic, p))
}
