package groupstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
)

// produceKeyed sends one record (key, value) to partition 0 of topic on
// node id with acks (-1 or 1), and returns the partition's error.
func (c *cluster) produceKeyed(ctx context.Context, id int32, topic string, acks int16, key, value string) error {
	opts := batch.NoProducer()
	opts.FirstTimestamp = time.Now().UnixMilli()
	records, err := batch.Build(nil, opts, []batch.Record{{Key: []byte(key), Value: []byte(value)}})
	if err != nil {
		return err
	}
	// Asked of this node alone: the client would route Metadata to any
	// node, a paused one too.
	seeds := c.node(id).Client().SeedBrokers()
	if len(seeds) == 0 {
		return errors.New("no seed broker")
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	id16, err := proctest.TopicID(rctx, seeds[0], topic)
	cancel()
	if err != nil {
		return err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id16
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var resp kmsg.Response
	if acks == -1 {
		resp, err = c.request(ctx, id, req)
	} else {
		// franz-go sends a ProduceRequest with its client's acks: a client
		// of this node with acks=1.
		cl, cerr := kgo.NewClient(kgo.SeedBrokers(c.node(id).Kafka()), kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.DisableIdempotentWrite(), kgo.RequestRetries(0))
		if cerr != nil {
			return cerr
		}
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err = cl.SeedBrokers()[0].Request(rctx, req)
	}
	if err != nil {
		return err
	}
	r := resp.(*kmsg.ProduceResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return errors.New("malformed produce response")
	}
	return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
}

// valuesOnDisk reads the .log files of topic-0 in node id's data dir and
// returns every value of key, in offset order. It reads files a live node
// may be writing: a torn tail is ignored.
func (c *cluster) valuesOnDisk(id int32, topic, key string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(c.node(id).DataDir(), "logs", topic+"-0", "*.log"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names) // 20-digit zero-padded base offsets sort as numbers
	var out []string
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for pos := 0; pos+batch.HeaderSize <= len(b); {
			h, err := batch.ParseHeader(b[pos:])
			if err != nil || h.Length <= 0 || pos+h.Size() > len(b) {
				break // preallocated zeros or a torn tail
			}
			err = batch.ForEachRecord(b[pos:pos+h.Size()], 1<<20, func(r *batch.Record) error {
				if string(r.Key) == key {
					out = append(out, string(r.Value))
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("%s at %d: %w", name, pos, err)
			}
			pos += h.Size()
		}
	}
	return out, nil
}

// compactionPasses counts node id's compaction passes over topic-0 (its
// debug log line), in its current run.
func (c *cluster) compactionPasses(id int32, topic string) int {
	n := 0
	for _, kv := range c.node(id).LogLines("compaction pass") {
		if kv["topic"] == topic && kv["partition"] == "0" {
			n++
		}
	}
	return n
}

// TestCompactionKeepsCommittedValueAcrossFailover: on a compacted topic
// (RF=3, min.insync.replicas=2), key k has a committed value v1 in a
// closed segment. Both followers are paused (SIGSTOP), so the leader's
// high watermark cannot advance, and the leader appends k=v2 with acks=1,
// above its high watermark. The leader compacts, is killed (SIGKILL), a
// follower takes over without v2, and the old leader returns, cuts its
// divergent tail (v2) and leads again (preferred election). A consumer
// then finds k=v1.
//
// Before the fix this failed: the leader's compaction took v2, above the
// high watermark, as k's latest value and dropped v1 from its closed
// segment; once v2 was truncated the key had no value on that replica,
// and a consumer of the partition led by it never saw k.
func TestCompactionKeepsCommittedValueAcrossFailover(t *testing.T) {
	const topic = "compacted"
	// A 10 s session: paused followers stay live (and in the ISR) for the
	// few seconds the leader takes to compact; 60 s of replica lag keeps
	// the leader from shrinking its ISR meanwhile.
	c := startCluster(t, "--broker-session-timeout", "10s", "--replica-lag-time-max", "60s",
		"--retention-check-interval", "200ms", "--log-level", "debug")
	ctx := proctest.Context(t, 4*time.Minute)
	seeds := []string{c.node(1).Kafka(), c.node(2).Kafka(), c.node(3).Kafka()}
	acl, err := kgo.NewClient(kgo.SeedBrokers(seeds...)) // not a node's own client: that one closes with its run
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	cfg := map[string]*string{"cleanup.policy": kmsg.StringPtr("compact"), "segment.bytes": kmsg.StringPtr("1024"),
		"min.insync.replicas": kmsg.StringPtr("2")}
	if resp, err := adm.CreateTopic(ctx, 1, 3, cfg, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	leader := c.waitInSync(topic, 0, 3, 60*time.Second)
	st, err := c.partition(ctx, leader, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Order[0] != leader {
		t.Fatalf("leader %d is not the preferred replica of %v", leader, st.Order)
	}
	var followers []*proctest.Node
	for _, id := range st.Order[1:] {
		followers = append(followers, c.node(id))
	}

	// Committed: k=v1, then an overwritten key f that rolls segments.
	// The metadata names the leader before its node has opened the replica
	// (UNKNOWN_TOPIC_OR_PARTITION until then): the first write is retried.
	var last error
	if err := proctest.WaitFor(30*time.Second, func() bool {
		last = c.produceKeyed(ctx, leader, topic, -1, "k", "v1")
		return last == nil
	}); err != nil {
		t.Fatalf("first produce to node %d: %v", leader, last)
	}
	for i := range 40 {
		if err := c.produceKeyed(ctx, leader, topic, -1, "f", fmt.Sprintf("committed-%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	// The followers stop fetching; the leader appends above its high watermark.
	for _, f := range followers {
		f.Pause()
	}
	// A follower's fetch held by the leader (a long poll) is answered with
	// the first record appended now, into the paused follower's socket,
	// which it appends when it resumes: a few records first, each a round
	// trip, so that v2 is appended after that answer went out.
	for i := range 5 {
		if err := c.produceKeyed(ctx, leader, topic, 1, "h", fmt.Sprintf("sent-to-paused-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.produceKeyed(ctx, leader, topic, 1, "k", "v2"); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := c.produceKeyed(ctx, leader, topic, 1, "g", fmt.Sprintf("uncommitted-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Two whole compaction passes after the append (the first may have
	// started before it).
	from := c.compactionPasses(leader, topic)
	if err := proctest.WaitFor(20*time.Second, func() bool { return c.compactionPasses(leader, topic) >= from+2 }); err != nil {
		t.Fatalf("node %d: no compaction pass of %s-0 after the uncommitted append", leader, topic)
	}
	onLeader, err := c.valuesOnDisk(leader, topic, "k")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after compaction the leader (node %d) holds k = %q", leader, onLeader)

	// Fail over to a follower that never had v2.
	c.node(leader).Kill()
	for _, f := range followers {
		f.Resume()
	}
	var next int32
	if err := proctest.WaitFor(60*time.Second, func() bool {
		next = -1
		for _, id := range st.Order[1:] {
			if s, err := c.partition(ctx, id, topic, 0); err == nil && s.Leader != leader && s.Leader > 0 {
				next = s.Leader
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no new leader after the kill of node %d", leader)
	}
	c.node(leader).Start()
	c.node(leader).WaitReady()
	c.waitInSync(topic, 0, 3, 60*time.Second)
	if err := proctest.WaitFor(60*time.Second, func() bool {
		if _, last = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); last != nil {
			return false
		}
		var s proctest.Partition
		s, last = c.partition(ctx, leader, topic, 0)
		return last == nil && s.Leader == leader
	}); err != nil {
		t.Fatalf("node %d never led %s-0 again (last error %v)", leader, topic, last)
	}
	back, err := c.valuesOnDisk(leader, topic, "k")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d led, node %d took over, node %d leads again and holds k = %q", leader, next, leader, back)

	// A consumer of the partition, now led by the node that compacted, reads
	// up to a last record written now (compaction leaves offsets without
	// records: the end offset need not be a record's).
	if err := proctest.WaitFor(30*time.Second, func() bool {
		return c.produceKeyed(ctx, leader, topic, -1, "end", "sentinel") == nil
	}); err != nil {
		t.Fatal("no produce to the new leader")
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	latest := map[string]string{}
	for latest["end"] == "" {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("never read the last record; read %v", latest)
		}
		fs.EachRecord(func(r *kgo.Record) { latest[string(r.Key)] = string(r.Value) })
	}
	if latest["k"] != "v1" {
		t.Fatalf("key k reads %q from the partition led by node %d, want v1 (its committed value); f reads %q",
			latest["k"], leader, latest["f"])
	}
	if latest["f"] != "committed-39" {
		t.Fatalf("key f reads %q, want committed-39", latest["f"])
	}
	if v, ok := latest["g"]; ok {
		t.Fatalf("key g reads %q: an uncommitted record survived the failover", v)
	}
	c.CheckNoPanic()
}
