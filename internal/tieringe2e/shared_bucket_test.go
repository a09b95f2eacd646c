package tieringe2e

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/tiering"
)

// Three brokers without --s3-bucket share the remote metadata but each has
// the filesystem bucket under its own data directory (issue 16 item 6).
// Tiering must then do nothing at all: before, the leader uploaded to its
// own directory, the followers took its metadata as covering their local
// segments and deleted them, and once the leader was gone every record
// below the survivors' local tail was unreadable.
func TestBrokersWithoutASharedBucketDoNotTier(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithTiering(100*time.Millisecond),
		testnode.WithSession(3*time.Second))
	ctx := ctxT(t, 90*time.Second)
	const topic = "apart"
	const n = 20_000
	adm := tieredTopicRF3(t, ctx, nodes, topic, n)
	// Several passes on every node, each seeing the conflict.
	for i, nd := range nodes {
		p0 := nd.Tiering().Stats().Passes
		waitFor(t, 30*time.Second, "ten tiering passes", func() bool {
			st := nd.Tiering().Stats()
			return st.Passes >= p0+10
		})
		if segs := finishedSegments(nd, topic); len(segs) != 0 {
			t.Fatalf("node %d: %d remote segments recorded over per-node buckets", i+1, len(segs))
		}
		if s := localLogStart(nd, topic); s != 0 {
			t.Fatalf("node %d: local log start %d: local data deleted", i+1, s)
		}
		if st := nd.Tiering().Stats(); !st.ColdTierConflict || st.SegmentsUploaded != 0 {
			t.Fatalf("node %d: cold tier conflict %v, %d segments uploaded; want the conflict seen and no upload",
				i+1, st.ColdTierConflict, st.SegmentsUploaded)
		}
	}
	// The leader goes; the survivors still hold everything.
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := m.Topics[topic].Partitions[0].Leader
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := nodes[leader-1].Close(cctx); err != nil {
		t.Logf("close the leader: %v", err)
	}
	survivor := nodes[leader%3]
	consumeFranz(t, survivor.KafkaAddr(), topic, 0, n)
}

// A broker without a shared bucket that joins a cluster whose metadata
// already lists remote segments its own bucket does not hold refuses to
// start, saying what to configure; it withdraws its record, so the broker
// that owns those segments goes on tiering.
func TestBrokerRefusesToJoinOverSegmentsItCannotRead(t *testing.T) {
	dir := t.TempDir()
	srv := testnode.StartNATS(t, dir)
	opts := []testnode.Option{testnode.WithNATS(srv.ClientURL()), testnode.WithTiering(100 * time.Millisecond)}
	first := testnode.Start(t, filepath.Join(dir, "a"), append(opts, testnode.WithNodeID(1))...)
	const topic = "alone"
	createTopic(t, first.KafkaAddr(), topic, 1, tieredTopicConfig)
	produceRange(t, first.KafkaAddr(), topic, 0, 20_000)
	waitTiered(t, first, topic, 3, 1)

	cfg := testnode.Config(filepath.Join(dir, "b"), append(opts, testnode.WithNodeID(2))...)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	second, err := broker.Start(ctx, cfg, testnode.Logger())
	if err == nil {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		second.Close(cctx)
		t.Fatal("a second broker with its own filesystem bucket started over remote segments it cannot read")
	}
	if !errors.Is(err, tiering.ErrColdTierNotShared) {
		t.Fatalf("start: %v, want ErrColdTierNotShared", err)
	}
	t.Logf("refused: %v", err)
	// The first broker, alone again, goes on tiering.
	up := first.Tiering().Stats().SegmentsUploaded
	produceRange(t, first.KafkaAddr(), topic, 20_000, 30_000)
	waitFor(t, 60*time.Second, "more uploads on the first broker", func() bool {
		st := first.Tiering().Stats()
		return !st.ColdTierConflict && st.SegmentsUploaded > up
	})
}
