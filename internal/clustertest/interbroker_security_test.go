package clustertest

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
)

// Inter-broker security with real processes (issue 18): SASL_SSL is the
// only listener of every node, so the replica fetchers, the transaction
// marker sender and the clients all log in with SCRAM-SHA-512 over TLS,
// with client certificates required (mTLS between nodes).

const (
	ibUser     = "broker"
	ibPassword = "broker-secret"
	refusedMsg = "replica fetcher: the leader refused this node's connection; retrying with backoff"
)

// secureCluster is the files and addresses of a SASL_SSL-only cluster.
type secureCluster struct {
	t     *testing.T
	dir   string
	nats  string
	ca    *testcerts.CA
	caPEM string // path
	addrs map[int32]string
	nodes map[int32]*node
}

func newSecureCluster(t *testing.T) *secureCluster {
	dir := t.TempDir()
	srv, err := natsembed.Start(natsembed.Config{StoreDir: filepath.Join(dir, "nats"), Port: -1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown) // after the nodes' cleanups: those were registered later
	ca := testcerts.NewCA(t, "cluster-ca")
	return &secureCluster{t: t, dir: dir, nats: srv.ClientURL(), ca: ca, caPEM: testcerts.Write(t, dir, "ca.pem", ca.CertPEM),
		addrs: map[int32]string{}, nodes: map[int32]*node{}}
}

// start runs node id (a new proctest node on the same data dir and Kafka
// address as its earlier runs) with the inter-broker password pass and
// extra flags, and waits until it is ready.
func (c *secureCluster) start(id int32, pass string, extra ...string) *node {
	t := c.t
	t.Helper()
	if c.addrs[id] == "" {
		c.addrs[id] = proctest.FreeAddr(t)
	}
	cert, key := c.ca.Node(t, fmt.Sprintf("node-%d", id))
	args := append([]string{
		"--node-id", fmt.Sprint(id), "--nats", c.nats,
		"--broker-session-timeout", "2s", "--controller-lease", "2s", "--replica-lag-time-max", "4s",
		"--listeners", "SASL_SSL://" + c.addrs[id], "--inter-broker-listener-name", "SASL_SSL",
		"--ssl-certificate-location", testcerts.Write(t, c.dir, fmt.Sprintf("node-%d.crt", id), cert),
		"--ssl-key-location", testcerts.Write(t, c.dir, fmt.Sprintf("node-%d.key", id), key),
		"--ssl-ca-location", c.caPEM, "--ssl-client-auth", "required",
		"--sasl-enabled-mechanisms", "SCRAM-SHA-512", "--sasl-mechanism-inter-broker-protocol", "SCRAM-SHA-512",
		"--inter-broker-sasl-username", ibUser,
		// The authorizer on, the inter-broker user a super user (its
		// follower fetches and markers need ClusterAction); the test's
		// application user is allowed where no ACL applies.
		"--authorizer", "standard", "--super-users", "User:" + ibUser, "--allow-everyone-if-no-acl-found",
	}, extra...)
	n := &node{id: id, Node: proctest.Serve(t, shaleBin, filepath.Join(c.dir, fmt.Sprintf("node-%d", id)), args,
		proctest.Name(fmt.Sprintf("secure node %d (run %d)", id, c.runs(id)+1)),
		proctest.Env("SHALE_INTER_BROKER_SASL_PASSWORD="+pass))}
	n.Start()
	n.WaitReady()
	c.nodes[id] = n
	return n
}

func (c *secureCluster) runs(id int32) int {
	if n := c.nodes[id]; n != nil {
		return n.Runs()
	}
	return 0
}

// client is a franz-go client of the live nodes over SASL_SSL as user,
// with a client certificate (the listeners require one).
func (c *secureCluster) client(user, pass string, opts ...kgo.Opt) *kgo.Client {
	t := c.t
	t.Helper()
	var seeds []string
	for id, n := range c.nodes {
		if n.Alive() {
			seeds = append(seeds, c.addrs[id])
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...),
		kgo.DialTLSConfig(&tls.Config{RootCAs: c.ca.Pool(), Certificates: []tls.Certificate{c.ca.ClientTLS(t, "test-client", "")}}),
		kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// waitISR waits until every one of parts partitions of topic has exactly
// want as its ISR and a leader in it.
func waitISR(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, parts int, want []int32, d time.Duration) {
	t.Helper()
	var last string
	err := proctest.Poll(d, 100*time.Millisecond, func() bool {
		v, err := proctest.AskPartitions(ctx, cl, topic)
		if err != nil {
			last = err.Error()
			return false
		}
		if len(v.Partitions) != parts {
			last = fmt.Sprintf("%d partitions", len(v.Partitions))
			return false
		}
		for p, pv := range v.Partitions {
			if !slices.Equal(pv.ISR, want) || !slices.Contains(want, pv.Leader) {
				last = fmt.Sprintf("partition %d: leader %d ISR %v, want ISR %v", p, pv.Leader, pv.ISR, want)
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("ISR of %s not %v after %v: %s", topic, want, d, last)
	}
}

// waitOutOfISR waits until node id is in the ISR of no partition of topic
// that it follows (it may lead some: the others fetch from it), and it
// follows at least one.
func waitOutOfISR(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, id int32, d time.Duration) {
	t.Helper()
	var last string
	err := proctest.Poll(d, 100*time.Millisecond, func() bool {
		v, err := proctest.AskPartitions(ctx, cl, topic)
		if err != nil {
			last = err.Error()
			return false
		}
		followed := 0
		for p, pv := range v.Partitions {
			if pv.Leader == id || !slices.Contains(pv.Replicas, id) {
				continue
			}
			followed++
			if slices.Contains(pv.ISR, id) {
				last = fmt.Sprintf("partition %d: leader %d ISR %v", p, pv.Leader, pv.ISR)
				return false
			}
		}
		last = "node follows no partition"
		return followed > 0
	})
	if err != nil {
		t.Fatalf("node %d still in the ISR of %s after %v: %s", id, topic, d, last)
	}
}

// fetchers returns node n's replica fetchers from its admin endpoint.
func fetchers(ctx context.Context, n *node) ([]adminapi.FetcherReplicationStatus, error) {
	st, err := adminapi.Client{Timeout: 3 * time.Second}.ReplicationStatus(ctx, n.Admin(), "")
	return st.Fetchers, err
}

// TestSASLSSLBetweenNodes: three nodes whose only listener is SASL_SSL
// (SCRAM-SHA-512, client certificates required) replicate an RF=3,
// min.insync.replicas=2 topic: every follower joins the ISR (so its
// fetchers logged in over TLS), acks=all writes survive a kill -9 of a
// partition leader, a consumer reads every acknowledged record, a
// committed transaction's markers reach every partition leader, and the
// killed node rejoins the ISR after its restart. No node ever logs a
// refused inter-broker connection. The authorizer is on with the
// inter-broker user as super user.
func TestSASLSSLBetweenNodes(t *testing.T) {
	const (
		topic = "secure"
		parts = 3
		n1    = 150 // records before the kill
		n2    = 150 // after it
	)
	c := newSecureCluster(t)
	for id := int32(1); id <= 3; id++ {
		c.start(id, ibPassword)
	}
	ctx := proctest.Context(t, 3*time.Minute)

	// The first node created the inter-broker user; it creates the
	// application's.
	cl := c.client(ibUser, ibPassword)
	adm := kadm.NewClient(cl)
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "app", Mechanism: kadm.ScramSha512,
		Iterations: 4096, Password: "app-secret"}}); err != nil {
		t.Fatal("creating the application's user as the inter-broker user: ", err)
	}
	minISR := "2"
	if resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitISR(ctx, t, cl, topic, parts, []int32{1, 2, 3}, 30*time.Second)

	acked := map[string]bool{}
	produce := func(cl *kgo.Client, from, n int) {
		t.Helper()
		for i := from; i < from+n; i += 10 {
			var rs []*kgo.Record
			for j := i; j < min(i+10, from+n); j++ {
				rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprintf("v-%d", j))})
			}
			for _, r := range cl.ProduceSync(ctx, rs...) {
				if r.Err != nil {
					t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
				}
				acked[string(r.Record.Value)] = true
			}
		}
	}
	pcl := c.client("app", "app-secret", kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(60*time.Second))
	produce(pcl, 0, n1)

	v, err := proctest.AskPartitions(ctx, cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	victim := c.nodes[v.Partitions[0].Leader]
	t.Logf("kill -9 node %d, leader of %s-0", victim.id, topic)
	victim.Kill()
	produce(pcl, n1, n2)

	// A consumer on the survivors reads every acknowledged record.
	ccl := c.client("app", "app-secret", kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	if err := proctest.Poll(60*time.Second, time.Millisecond, func() bool {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		ccl.PollFetches(fctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		for v := range acked {
			if !seen[v] {
				return false
			}
		}
		return true
	}); err != nil {
		var missing []string
		for v := range acked {
			if !seen[v] {
				missing = append(missing, v)
			}
		}
		t.Fatalf("consumer: %d of %d acknowledged records missing, e.g. %v", len(missing), len(acked), missing[:min(5, len(missing))])
	}

	// Transaction markers go between nodes too: a committed transaction
	// over every partition is visible to a read_committed consumer.
	tcl := c.client("app", "app-secret", kgo.TransactionalID("secure-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := tcl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		if err := tcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("txn-%d", p))}).FirstErr(); err != nil {
			t.Fatal("transactional produce: ", err)
		}
	}
	if err := tcl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal("commit: ", err)
	}
	rcl := c.client("app", "app-secret", kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	txnSeen := 0
	if err := proctest.Poll(30*time.Second, time.Millisecond, func() bool {
		fctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		rcl.PollFetches(fctx).EachRecord(func(r *kgo.Record) {
			if strings.HasPrefix(string(r.Value), "txn-") {
				txnSeen++
			}
		})
		return txnSeen == parts
	}); err != nil {
		t.Fatalf("read_committed consumer saw %d of the transaction's %d records", txnSeen, parts)
	}

	// The killed node comes back and its fetchers log in again.
	victim.Start()
	victim.WaitReady()
	waitISR(ctx, t, cl, topic, parts, []int32{1, 2, 3}, 60*time.Second)
	for id, n := range c.nodes {
		fs, err := fetchers(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) == 0 {
			t.Fatalf("node %d has no replica fetcher", id)
		}
		if got := n.CountLines(refusedMsg); got != 0 {
			t.Fatalf("node %d logged %d refused inter-broker connections:\n%s", id, got, n.Tail())
		}
		if strings.Contains(n.Output(), "is not in super_users") {
			t.Fatalf("node %d: the inter-broker principal is not taken for the super user it is:\n%s", id, n.Tail())
		}
		n.CheckNoPanic()
	}
	t.Logf("%d acknowledged records read back, %d transactional records committed", len(acked), txnSeen)
}

// TestInterBrokerRefusalsAreVisible: a third node with a wrong inter-broker
// password, then with a CA that does not trust its peers, never joins the
// ISR, says why at start and in a Warn line, shows the failure in its
// replication status, and retries with backoff (not in a hot loop); with
// the right settings it joins the ISR.
func TestInterBrokerRefusalsAreVisible(t *testing.T) {
	const (
		topic = "refused"
		parts = 3
	)
	c := newSecureCluster(t)
	c.start(1, ibPassword)
	c.start(2, ibPassword)
	ctx := proctest.Context(t, 3*time.Minute)
	cl := c.client(ibUser, ibPassword)
	adm := kadm.NewClient(cl)

	// checkRefused waits for node n's refusal, then checks that its
	// fetchers keep retrying, with backoff.
	checkRefused := func(n *node, want string) {
		t.Helper()
		if err := proctest.WaitFor(30*time.Second, func() bool { return n.CountLines(refusedMsg) > 0 }); err != nil {
			t.Fatalf("node %d: no %q line:\n%s", n.id, refusedMsg, n.Tail())
		}
		if line := n.LogLines(refusedMsg)[0]; line["level"] != "WARN" || !strings.Contains(line["err"], want) {
			t.Fatalf("node %d: refusal logged as %v, want a WARN whose err has %q", n.id, line, want)
		}
		failures := func() (int, string) {
			fs, err := fetchers(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			most, msg := 0, ""
			for _, f := range fs {
				if f.ConsecutiveFailures > most {
					most, msg = f.ConsecutiveFailures, f.Error
				}
			}
			return most, msg
		}
		// Past the first doublings of the backoff (50 ms up to 1 s).
		var f1 int
		var msg string
		if err := proctest.WaitFor(20*time.Second, func() bool { f1, msg = failures(); return f1 >= 6 }); err != nil {
			t.Fatalf("node %d: fetcher failures %d (%q), want them counted in replication status", n.id, f1, msg)
		}
		if !strings.Contains(msg, want) {
			t.Fatalf("node %d: replication status error %q, want %q", n.id, msg, want)
		}
		t.Logf("node %d: logged %q; replication status: %d failures, error %q", n.id, n.LogLines(refusedMsg)[0]["err"], f1, msg)
		const window = 3 * time.Second
		deadline := time.Now().Add(window)
		proctest.WaitFor(window+time.Second, func() bool { return time.Now().After(deadline) })
		f2, _ := failures()
		if f2 <= f1 || f2-f1 > 2*int(window/time.Second)+2 {
			t.Fatalf("node %d: failures went from %d to %d in %v: want retries at most about one a second", n.id, f1, f2, window)
		}
		// One Warn per fetcher (one per leader), repeated only every 30 s.
		if got := n.CountLines(refusedMsg); got > 2 {
			t.Fatalf("node %d: %d refusal lines in a few seconds, want them rate-limited", n.id, got)
		}
		waitOutOfISR(ctx, t, cl, topic, n.id, 20*time.Second)
	}

	// Run 1: the wrong password. The credential is already there (node 1
	// created it); node 3 says at start that its password does not match.
	bad := c.start(3, "not-the-password")
	if bad.CountLines("the inter-broker password does not match the SCRAM credential of its user in the control plane: the other nodes will refuse this node's replica fetchers and transaction markers") != 1 {
		t.Fatalf("node 3 did not say at start that its password does not match:\n%s", bad.Tail())
	}
	minISR := "2"
	if resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": &minISR}, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	checkRefused(bad, "SASL_AUTHENTICATION_FAILED")
	// The cluster still takes acks=all writes (min.insync.replicas=2).
	pcl := c.client(ibUser, ibPassword, kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bad.Stop(30 * time.Second)

	// Run 2: the right password, but a CA that does not sign the peers'
	// certificates.
	other := testcerts.NewCA(t, "other-ca")
	bad = c.start(3, ibPassword, "--inter-broker-ssl-ca-location", testcerts.Write(t, c.dir, "other-ca.pem", other.CertPEM))
	checkRefused(bad, "certificate signed by unknown authority")
	bad.Stop(30 * time.Second)

	// Run 3: right settings; node 3 catches up and joins the ISR.
	good := c.start(3, ibPassword)
	waitISR(ctx, t, cl, topic, parts, []int32{1, 2, 3}, 60*time.Second)
	if got := good.CountLines(refusedMsg); got != 0 {
		t.Fatalf("node 3 with the right settings logged %d refusals:\n%s", got, good.Tail())
	}
	for _, n := range c.nodes {
		n.CheckNoPanic()
	}
}
