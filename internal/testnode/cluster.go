package testnode

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/vfs"
)

// WithNATS points the node at an external NATS server instead of starting
// the embedded one.
func WithNATS(url string) Option { return func(c *config.Broker) { c.NATS = url } }

// WithNodeID sets the broker id.
func WithNodeID(id int32) Option { return func(c *config.Broker) { c.NodeID = id } }

// WithSession shortens the broker session and the controller lease, so that
// failover tests run in seconds.
func WithSession(d time.Duration) Option {
	return func(c *config.Broker) { c.BrokerSessionTimeout, c.ControllerLease = d, d }
}

// StartNATS starts a standalone NATS server with JetStream for a cluster of
// nodes, stopped when the test ends.
func StartNATS(t testing.TB, dir string) *natsembed.Server {
	t.Helper()
	srv, err := natsembed.Start(natsembed.Config{StoreDir: filepath.Join(dir, "nats"), Port: -1, Logger: testLogger(t, "NATS server")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// StartCluster starts n nodes (ids 1..n) on one standalone NATS server.
func StartCluster(t testing.TB, dir string, n int, opts ...Option) ([]*broker.Node, *natsembed.Server) {
	t.Helper()
	return startCluster(t, dir, make([]vfs.FS, n), opts...)
}

// StartClusterOnFS is StartCluster with len(fss) nodes, node i+1's
// partition logs on fss[i] (broker.WithLogFS; nil: the operating
// system's): a test fails one node's disk with vfs.WithErrors while the
// others' work.
func StartClusterOnFS(t testing.TB, dir string, fss []vfs.FS, opts ...Option) ([]*broker.Node, *natsembed.Server) {
	t.Helper()
	return startCluster(t, dir, fss, opts...)
}

func startCluster(t testing.TB, dir string, fss []vfs.FS, opts ...Option) ([]*broker.Node, *natsembed.Server) {
	t.Helper()
	srv := StartNATS(t, dir)
	nodes := make([]*broker.Node, len(fss))
	for i := range nodes {
		o := append([]Option{WithNATS(srv.ClientURL()), WithNodeID(int32(i + 1))}, opts...)
		var so []broker.StartOption
		if fss[i] != nil {
			so = append(so, broker.WithLogFS(fss[i]))
		}
		nodes[i] = start(t, filepath.Join(dir, "node", string(rune('a'+i))), so, o...)
	}
	return nodes, srv
}

// SeededAdmin waits (up to 20 s) until node 1's Metadata lists every node
// of nodes as a broker, and returns their Kafka addresses (node i+1's at
// i) and an admin client seeded with all of them.
func SeededAdmin(t testing.TB, ctx context.Context, nodes []*broker.Node) ([]string, *kadm.Client) {
	t.Helper()
	seeds := make([]string, len(nodes))
	for i, n := range nodes {
		seeds[i] = n.KafkaAddr()
	}
	adm := kadm.NewClient(Client(t, seeds[0], kgo.SeedBrokers(seeds...)))
	proctest.Eventually(t, 20*time.Second, fmt.Sprintf("%d brokers", len(nodes)), func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == len(nodes)
	})
	return seeds, adm
}

// WithRack sets the node's rack (broker.rack).
func WithRack(rack string) Option { return func(c *config.Broker) { c.Rack = rack } }

// WithRackAwareSelector has the node's leaders name a preferred read
// replica in a consumer's rack (replica.selector.class
// RackAwareReplicaSelector, KIP-392).
func WithRackAwareSelector() Option {
	return func(c *config.Broker) { c.ReplicaSelectorClass = config.RackAwareReplicaSelector }
}

// WithQuotaWindow sets the client quotas' sample window
// (quota_window_size), so that quota tests see
// throttling within a second.
func WithQuotaWindow(d time.Duration) Option {
	return func(c *config.Broker) { c.QuotaWindowSize = d }
}
