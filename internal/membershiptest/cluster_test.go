package membershiptest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/proctest"
)

// node is one shale broker (id fixed, ports and data dir kept across its
// runs) run by a test as a child process.
type node struct {
	*proctest.Node
	id int32
}

// pause pauses n (SIGSTOP) and returns the function that resumes it; only
// its first call does. A test calls it where n is to run again and defers
// it too, so that a test that ends before does not leave n stopped.
func (n *node) pause() (resume func()) {
	n.Pause()
	resumed := false
	return func() {
		if !resumed {
			n.Resume()
			resumed = true
		}
	}
}

// partitionDir is the directory of one partition's log on this node.
func (n *node) partitionDir(topic string, p int32) string {
	return filepath.Join(n.DataDir(), "logs", fmt.Sprintf("%s-%d", topic, p))
}

// cluster is shale processes on one NATS server run in the test process
// (proctest.Cluster), with the package's view of each node.
type cluster struct {
	*proctest.Cluster
	t     testing.TB
	nodes map[int32]*node
}

// startCluster starts NATS and nodes ids (a 3 s broker session, a 2 s
// controller lease, a 3 s replica.lag.time.max), and waits until each is
// ready and the controller sees them all.
func startCluster(t testing.TB, ids ...int32) *cluster {
	t.Helper()
	return startClusterFlags(t, nil, ids...)
}

// startClusterFlags is startCluster with more node flags (proctest.NodeFlags).
func startClusterFlags(t testing.TB, flags []string, ids ...int32) *cluster {
	t.Helper()
	c := &cluster{t: t, nodes: map[int32]*node{}, Cluster: proctest.NewCluster(t, shaleBin,
		proctest.ClusterName("membershiptest"), proctest.NodeFlags("--broker-session-timeout", "3s"), proctest.NodeFlags(flags...))}
	for _, id := range ids {
		c.newNode(id)
	}
	c.Start(ids...)
	return c
}

// newNode prepares node id; it does not start it.
func (c *cluster) newNode(id int32) *node {
	n := &node{Node: c.NewNode(id), id: id}
	c.nodes[id] = n
	return n
}

// addNode starts a new node id and waits until the cluster sees it.
func (c *cluster) addNode(id int32) *node {
	c.t.Helper()
	n := c.newNode(id)
	c.Start(id)
	return n
}

// waitBrokers waits until the live nodes list exactly ids as brokers and
// name a controller.
func (c *cluster) waitBrokers(ids ...int32) { c.t.Helper(); c.WaitBrokers(30*time.Second, ids...) }

// anyLive returns the live node with the smallest id.
func (c *cluster) anyLive() *node {
	c.t.Helper()
	return c.nodes[c.LiveIDs()[0]]
}

// client returns a franz-go client seeded with every live node, closed at
// the end of the test.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client { c.t.Helper(); return c.Client(opts...) }

// admin returns an admin client over the live nodes.
func (c *cluster) admin() *kadm.Client { return kadm.NewClient(c.client()) }

// createTopic creates a topic with the default placement and waits until
// every partition has a leader and a full ISR.
func (c *cluster) createTopic(topic string, parts int32, rf int16, configs map[string]string) {
	c.t.Helper()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	resp, err := c.admin().CreateTopic(proctest.Context(c.t, 30*time.Second), parts, rf, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
	for p := range parts {
		c.WaitPartition(topic, p, 30*time.Second, func(pv proctest.Partition) bool {
			return pv.Leader >= 0 && len(pv.ISR) == int(rf)
		})
	}
}

// produce writes records "0".."n-1" to partition p of topic with acks=all,
// each acknowledged before produce returns, and returns their offsets.
func (c *cluster) produce(topic string, p int32, n int) []int64 {
	c.t.Helper()
	return c.produceFrom(topic, p, 0, n)
}

// produceFrom is produce for the records "from".."from+n-1": a later run
// continues the numbering of an earlier one, so checkRecords can check the
// two runs' offsets appended.
func (c *cluster) produceFrom(topic string, p int32, from, n int) []int64 {
	c.t.Helper()
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second))
	defer cl.Close()
	ctx := proctest.Context(c.t, time.Minute)
	offsets := make([]int64, 0, n)
	const batch = 50
	for i := from; i < from+n; i += batch {
		var rs []*kgo.Record
		for j := i; j < min(i+batch, from+n); j++ {
			rs = append(rs, &kgo.Record{Partition: p, Value: []byte(strconv.Itoa(j))})
		}
		for _, r := range cl.ProduceSync(ctx, rs...) {
			if r.Err != nil {
				c.t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
			}
			offsets = append(offsets, r.Record.Offset)
		}
	}
	return offsets
}

// checkRecords reads partition p of topic from the earliest offset to its
// high watermark and fails the test unless it holds exactly the records
// "0".."n-1" at the offsets produce returned.
func (c *cluster) checkRecords(topic string, p int32, offsets []int64) {
	c.t.Helper()
	ctx := proctest.Context(c.t, 2*time.Minute)
	want := int64(len(offsets))
	// A new leader opens with its checkpointed high watermark, which may
	// lag its log, and (KIP-966) moves it only once the ISR is back at
	// min.insync.replicas: wait for it to reach the acknowledged records.
	var start, end kadm.ListedOffset
	var lerr error
	proctest.WaitFor(30*time.Second, func() bool {
		ends, err := c.admin().ListEndOffsets(ctx, topic)
		if err != nil {
			lerr = err
			return false
		}
		starts, err := c.admin().ListStartOffsets(ctx, topic)
		if err != nil {
			lerr = err
			return false
		}
		var ok bool
		if end, ok = ends.Lookup(topic, p); !ok || end.Err != nil {
			lerr = fmt.Errorf("%s-%d end offset: %v", topic, p, end.Err)
			return false
		}
		start, _ = starts.Lookup(topic, p)
		lerr = nil
		return end.Offset-start.Offset == want
	})
	if lerr != nil {
		c.t.Fatal(lerr)
	}
	if end.Offset-start.Offset != want {
		c.t.Fatalf("%s-%d: offsets %d..%d hold %d records, want the %d acknowledged", topic, p,
			start.Offset, end.Offset, end.Offset-start.Offset, want)
	}
	cons := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	defer cons.Close()
	var got []*kgo.Record
	for int64(len(got)) < want {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("%s-%d: read %d of %d records: %v", topic, p, len(got), want, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { c.t.Logf("%s-%d fetch: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	for i, off := range offsets {
		r := got[i]
		if r.Offset != off || string(r.Value) != strconv.Itoa(i) {
			c.t.Fatalf("%s-%d: record %d is %q at offset %d, acknowledged at offset %d", topic, p, i, r.Value, r.Offset, off)
		}
	}
}
