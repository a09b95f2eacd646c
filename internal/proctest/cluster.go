package proctest

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/infra/natsembed"
)

// Cluster is shale nodes run as child processes (Serve) on one NATS server
// that runs in the test process: the harness the process-test packages
// share. A node keeps its id, ports and data dir across its runs; tests
// kill, stop, pause and restart it through its Node. With NATSProxies each
// node reaches NATS through its own Proxy, so a test can cut one node off
// the control plane.
//
// A Cluster is used from the test's goroutine.
type Cluster struct {
	t       testing.TB
	bin     string
	dir     string
	natsURL string
	nats    *natsembed.Server
	cfg     clusterConfig

	nodes   map[int32]*Node
	proxies map[int32]*Proxy
}

type clusterConfig struct {
	name    string   // the nodes are named "<name> node <id>"
	flags   []string // flag and value pairs given to every node
	env     []string
	proxies bool
}

// ClusterOption sets up a Cluster.
type ClusterOption func(*clusterConfig)

// ClusterName names the nodes "<name> node <id>" in their run markers and
// failure messages; the default is "cluster".
func ClusterName(name string) ClusterOption {
	return func(c *clusterConfig) { c.name = name }
}

// NodeFlags gives every node more arguments ("--replica-lag-time-max", "5s",
// "--s3-path-style"): a flag of DefaultNodeFlags takes the new value, every
// other argument is added.
func NodeFlags(kv ...string) ClusterOption {
	return func(c *clusterConfig) { c.flags = mergeFlags(c.flags, kv) }
}

// NodeEnv adds KEY=value pairs (fault-injection hooks) to every node's
// environment.
func NodeEnv(kv ...string) ClusterOption {
	return func(c *clusterConfig) { c.env = append(c.env, kv...) }
}

// NATSProxies puts a Proxy between each node and the NATS server.
func NATSProxies() ClusterOption { return func(c *clusterConfig) { c.proxies = true } }

// DefaultNodeFlags are the flags every node of a Cluster gets unless
// NodeFlags changes them: a 2 s broker session and controller lease and a
// 3 s replica.lag.time.max, so failures are noticed within seconds.
var DefaultNodeFlags = []string{
	"--broker-session-timeout", "2s",
	"--controller-lease", "2s",
	"--replica-lag-time-max", "3s",
}

// NewCluster starts the NATS server (JetStream, in a directory of the
// test's) and prepares a cluster of bin with no node yet. The server shuts
// down at the end of the test, after the nodes that were prepared later.
func NewCluster(t testing.TB, bin string, opts ...ClusterOption) *Cluster {
	t.Helper()
	cfg := clusterConfig{name: "cluster", flags: slices.Clone(DefaultNodeFlags)}
	for _, o := range opts {
		o(&cfg)
	}
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Config{StoreDir: filepath.Join(dir, "nats"), Port: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, dir: dir, natsURL: srv.ClientURL(), nats: srv, cfg: cfg,
		nodes: map[int32]*Node{}, proxies: map[int32]*Proxy{}}
	t.Cleanup(func() { c.nats.Shutdown() }) // runs after the nodes' cleanups, registered later
	return c
}

// RestartNATS shuts the NATS server down and starts it again on the same
// port and store: with every node stopped first, a full restart of the
// cluster, control plane included. Running nodes reconnect.
func (c *Cluster) RestartNATS() {
	c.t.Helper()
	u, err := url.Parse(c.natsURL)
	if err != nil {
		c.t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		c.t.Fatal(err)
	}
	c.nats.Shutdown()
	srv, err := natsembed.Start(natsembed.Config{StoreDir: filepath.Join(c.dir, "nats"), Port: port,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		c.t.Fatalf("restarting NATS on port %d: %v", port, err)
	}
	c.nats = srv
}

// StartCluster is NewCluster and Start of nodes ids.
func StartCluster(t testing.TB, bin string, ids []int32, opts ...ClusterOption) *Cluster {
	t.Helper()
	c := NewCluster(t, bin, opts...)
	c.Start(ids...)
	return c
}

// Dir is the directory under which the NATS store and the nodes' data
// dirs ("node-<id>") are.
func (c *Cluster) Dir() string { return c.dir }

// NATSURL is the NATS server's URL (the proxies', with NATSProxies, are
// the nodes').
func (c *Cluster) NATSURL() string { return c.natsURL }

// NewNode prepares node id with the cluster's flags and then extra
// arguments (merged as NodeFlags does); it does not start it. Preparing an id twice
// fails the test.
func (c *Cluster) NewNode(id int32, extra ...string) *Node {
	c.t.Helper()
	if _, ok := c.nodes[id]; ok {
		c.t.Fatalf("node %d prepared twice", id)
	}
	url := c.natsURL
	if c.cfg.proxies {
		px := NewProxy(c.t, url[len("nats://"):])
		c.proxies[id] = px
		url = "nats://" + px.Addr()
	}
	flags := mergeFlags(c.cfg.flags, extra)
	n := Serve(c.t, c.bin, filepath.Join(c.dir, fmt.Sprintf("node-%d", id)),
		append([]string{"--node-id", fmt.Sprint(id), "--nats", url}, flags...),
		Name(fmt.Sprintf("%s node %d", c.cfg.name, id)), Env(c.cfg.env...))
	c.nodes[id] = n
	return n
}

// Start starts nodes ids (preparing those not prepared yet), waits until
// each is ready, and then until the live nodes see exactly the live ids as
// brokers and a controller (WaitBrokers).
func (c *Cluster) Start(ids ...int32) {
	c.t.Helper()
	for _, id := range ids {
		n, ok := c.nodes[id]
		if !ok {
			n = c.NewNode(id)
		}
		n.Start()
	}
	for _, id := range ids {
		c.nodes[id].WaitReady()
	}
	c.WaitBrokers(30*time.Second, c.LiveIDs()...)
}

// Node returns node id, failing the test if it was never prepared.
func (c *Cluster) Node(id int32) *Node {
	c.t.Helper()
	n, ok := c.nodes[id]
	if !ok {
		c.t.Fatalf("no node %d", id)
	}
	return n
}

// Proxy returns the proxy between node id and NATS (NATSProxies), or nil.
func (c *Cluster) Proxy(id int32) *Proxy { return c.proxies[id] }

// IDs returns the ids of every prepared node, sorted.
func (c *Cluster) IDs() []int32 {
	ids := make([]int32, 0, len(c.nodes))
	for id := range c.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Live reports whether node id has a run that is neither paused nor cut off
// the control plane by its proxy.
func (c *Cluster) Live(id int32) bool {
	n, ok := c.nodes[id]
	if !ok || !n.Alive() || n.Paused() {
		return false
	}
	px := c.proxies[id]
	return px == nil || !px.IsCut()
}

// LiveIDs returns the ids of the live nodes (Live), sorted.
func (c *Cluster) LiveIDs() []int32 {
	var out []int32
	for _, id := range c.IDs() {
		if c.Live(id) {
			out = append(out, id)
		}
	}
	return out
}

// AnyLive returns the live node with the smallest id, failing the test if
// none is.
func (c *Cluster) AnyLive() *Node {
	c.t.Helper()
	ids := c.LiveIDs()
	if len(ids) == 0 {
		c.t.Fatal("no live node")
	}
	return c.nodes[ids[0]]
}

// WaitBrokers waits up to d until every live node lists exactly ids as
// brokers and names a controller, failing the test otherwise.
func (c *Cluster) WaitBrokers(d time.Duration, ids ...int32) {
	c.t.Helper()
	want := slices.Sorted(slices.Values(ids))
	ctx := Context(c.t, d+5*time.Second)
	var last string
	err := WaitFor(d, func() bool {
		live := c.LiveIDs()
		if len(live) == 0 {
			last = "no live node"
			return false
		}
		for _, id := range live {
			resp, err := c.nodes[id].Metadata(ctx)
			if err != nil {
				last = fmt.Sprintf("node %d: %v", id, err)
				return false
			}
			var got []int32
			for _, b := range resp.Brokers {
				got = append(got, b.NodeID)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) || resp.ControllerID < 0 {
				last = fmt.Sprintf("node %d: brokers %v, controller %d", id, got, resp.ControllerID)
				return false
			}
		}
		return true
	})
	if err != nil {
		c.t.Fatalf("want brokers %v and a controller: %s", want, last)
	}
}

// Client returns a franz-go client seeded with every live node, retrying
// every 100 ms and refreshing metadata as often, closed at the end of the
// test.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	var seeds []string
	for _, id := range c.LiveIDs() {
		seeds = append(seeds, c.nodes[id].Kafka())
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// CheckNoPanic checks every node's output for panics and races.
func (c *Cluster) CheckNoPanic() {
	c.t.Helper()
	for _, id := range c.IDs() {
		c.nodes[id].CheckNoPanic()
	}
}

// mergeFlags returns base followed by kv, except that a flag of
// DefaultNodeFlags in kv replaces its value in base instead (the defaults
// are each given once); every other argument, a flag that may repeat
// ("--topic-default") or one without a value ("--s3-path-style"), is
// appended as it is.
func mergeFlags(base, kv []string) []string {
	out := slices.Clone(base)
	for i := 0; i < len(kv); i++ {
		if j := flagIndex(out, kv[i]); j >= 0 && flagIndex(DefaultNodeFlags, kv[i]) >= 0 && i+1 < len(kv) {
			out[j+1] = kv[i+1]
			i++
			continue
		}
		out = append(out, kv[i])
	}
	return out
}

// flagIndex is the index of flag in pairs (flag and value pairs), or -1.
func flagIndex(pairs []string, flag string) int {
	for j := 0; j+1 < len(pairs); j += 2 {
		if pairs[j] == flag {
			return j
		}
	}
	return -1
}

// Destroy kills every live node (SIGKILL), shuts the NATS server down and
// removes the NATS store and every node's data dir: a cluster lost but for
// what it wrote elsewhere (a bucket). The Cluster is unusable after.
func (c *Cluster) Destroy() {
	c.t.Helper()
	for _, id := range c.IDs() {
		if c.nodes[id].Alive() {
			c.nodes[id].Kill()
		}
	}
	c.nats.Shutdown()
	if err := os.RemoveAll(c.dir); err != nil {
		c.t.Fatalf("removing %s: %v", c.dir, err)
	}
}

// Nodes returns every prepared node by id (a new map).
func (c *Cluster) Nodes() map[int32]*Node { return maps.Clone(c.nodes) }
