package replicationtest

import (
	"fmt"
	"path/filepath"

	"github.com/shale-io/shale/internal/proctest"
)

// node is one shale broker (id fixed, ports and data dir kept across its
// runs) run by a test as a child process.
type node struct {
	*proctest.Node
	id int32
}

// partitionDir is the directory of one partition's log on this node.
func (n *node) partitionDir(topic string, p int32) string {
	return filepath.Join(n.DataDir(), "logs", fmt.Sprintf("%s-%d", topic, p))
}
