package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/sdk"
)

// coldTopic creates topic with small segments that leave the local disk as
// soon as they are in the bucket (and are kept forever), writes n records
// (record i at time base + i s in partition i % partitions, one batch each
// so that segments roll), and waits until offsets below minLocalStart are served only from
// the cold tier.
func coldTopic(ctx context.Context, a *sdk.Admin, topic string, partitions int32, n int, base time.Time, minLocalStart int64) error {
	err := a.CreateTopic(ctx, topic, partitions, 1, map[string]string{"segment.bytes": "1024", "local.retention.bytes": "0", "retention.ms": "-1"})
	if err != nil {
		return err
	}
	p, err := sdk.NewProducer(sdk.WithSeeds(seed), sdk.WithLinger(0))
	if err != nil {
		return err
	}
	defer p.Close(ctx)
	for i := range n {
		// A key that the Java partitioner puts in partition i % partitions.
		var key []byte
		for j := 0; key == nil || sdk.KeyPartition(key, int(partitions)) != i%int(partitions); j++ {
			key = fmt.Appendf(nil, "k%d-%d", i, j)
		}
		r := &sdk.Record{Topic: topic, Key: key, Value: fmt.Appendf(nil, "v%03d", i),
			Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := p.SendSync(ctx, r); err != nil {
			return err
		}
	}
	for {
		st, err := a.TierStatus(ctx, topic)
		if err != nil {
			return err
		}
		cold := len(st.Partitions) == int(partitions)
		for _, ps := range st.Partitions {
			cold = cold && ps.LocalLogStartOffset >= minLocalStart && ps.LogStartOffset == 0 && ps.RemoteSegments > 0
		}
		if cold {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("tiering of %s: %w (status %+v)", topic, ctx.Err(), st)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestReplayColdRange replays ranges by offset and by time that start in
// the bucket (below every local log start) and end in the middle of the
// log, and checks every record in the range comes back exactly once.
func TestReplayColdRange(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	base := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	if err := coldTopic(ctx, a, "history", 1, 200, base, 40); err != nil {
		t.Fatal(err)
	}
	c := newConsumer(t, sdk.WithTopics("history"))
	check := func(name string, from, to sdk.Position, first, end int) {
		t.Helper()
		var got []string
		err := c.Replay(ctx, "history", from, to, func(r *sdk.Record) error {
			got = append(got, string(r.Value))
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != end-first {
			t.Fatalf("%s: %d records, want %d", name, len(got), end-first)
		}
		for i, v := range got {
			if want := fmt.Sprintf("v%03d", first+i); v != want {
				t.Fatalf("%s: record %d is %s, want %s", name, i, v, want)
			}
		}
	}
	check("offsets", sdk.AtOffset(5), sdk.AtOffset(150), 5, 150)
	check("times", sdk.AtTime(base.Add(10*time.Second)), sdk.AtTime(base.Add(30*time.Second+time.Millisecond)), 10, 31)
	check("start to end", sdk.Start(), sdk.End(), 0, 200)
	check("empty", sdk.AtOffset(7), sdk.AtOffset(7), 0, 0)
	check("past the end", sdk.AtOffset(190), sdk.AtOffset(10_000), 190, 200)

	// The iterator form, stopped early.
	n := 0
	for r, err := range c.ReplayRecords(ctx, "history", sdk.AtOffset(0), sdk.End()) {
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("v%03d", n); string(r.Value) != want {
			t.Fatalf("iterator record %d is %s", n, r.Value)
		}
		if n++; n == 25 {
			break
		}
	}
	stop := errors.New("enough")
	if err := c.Replay(ctx, "history", sdk.Start(), sdk.End(), func(*sdk.Record) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("callback error: %v", err)
	}
	if err := c.Replay(ctx, "history", sdk.AtOffset(10), sdk.AtOffset(5), nil); !errors.Is(err, sdk.ErrInvalidRange) {
		t.Fatalf("backwards range: %v", err)
	}
	if err := c.Replay(ctx, "nope", sdk.Start(), sdk.End(), nil); !errors.Is(err, sdk.ErrTopicNotFound) {
		t.Fatalf("missing topic: %v", err)
	}
}

// TestReplayPartitions replays a cold range over several partitions, with a
// consumer made for Replay alone: each partition's part arrives in offset
// order and ends at its own bound.
func TestReplayPartitions(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	base := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	if err := coldTopic(ctx, a, "history3", 3, 240, base, 20); err != nil {
		t.Fatal(err)
	}
	// A consumer for Replay alone needs no WithTopics (it did; issue 27).
	c := newConsumer(t)
	if _, err := c.Poll(ctx); !errors.Is(err, sdk.ErrNoSubscription) {
		t.Fatalf("Poll of a replay-only consumer: %v", err)
	}
	last := map[int32]int64{}
	count := 0
	// Records i go to partition i%3 at offset i/3; times [base+30s, base+210s) are i in [30, 210).
	err := c.Replay(ctx, "history3", sdk.AtTime(base.Add(30*time.Second)), sdk.AtTime(base.Add(210*time.Second)), func(r *sdk.Record) error {
		var i int
		fmt.Sscanf(string(r.Value), "v%d", &i)
		if i < 30 || i >= 210 || int32(i%3) != r.Partition || int64(i/3) != r.Offset {
			return fmt.Errorf("record %s at %d@%d outside the range", r.Value, r.Partition, r.Offset)
		}
		if prev, ok := last[r.Partition]; ok && r.Offset != prev+1 {
			return fmt.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
		}
		last[r.Partition] = r.Offset
		count++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count != 180 {
		t.Fatalf("replayed %d records, want 180", count)
	}
}

// TestReplayTransactionalTopic: Replay ends on partitions whose bound lies
// past their last data record: one ending in a COMMIT marker, one ending in
// an ABORT marker after aborted records, one empty; read_uncommitted (the
// default, aborted records come back) and read_committed (they do not, and
// a bound inside the aborted records is passed by the marker after them).
// Replay judged a partition done by the records it handed to fn, so it
// never ended on a transactional topic (issue 22 item 8).
func TestReplayTransactionalTopic(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, a, "replay-txn", 3, nil)
	cl := testnode.Client(t, seed, kgo.TransactionalID("replay-txn"), kgo.DefaultProduceTopic("replay-txn"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	inTxn := func(partition int32, n int, end kgo.TransactionEndTry) {
		t.Helper()
		testnode.ProduceInTxn(t, ctx, cl, partition, n, end)
	}
	inTxn(0, 10, kgo.TryCommit) // 0..9, COMMIT at 10
	inTxn(1, 5, kgo.TryCommit)  // 0..4, COMMIT at 5
	inTxn(1, 4, kgo.TryAbort)   // 6..9 aborted, ABORT at 10
	// The coordinator writes the markers after EndTxn answers.
	want := map[int32]sdk.OffsetRange{0: {End: 11}, 1: {End: 11}, 2: {}}
	for {
		got, err := a.PartitionOffsets(ctx, "replay-txn")
		if err != nil {
			t.Fatal(err)
		}
		if maps.Equal(got, want) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("partition offsets %v, want %v", got, want)
		case <-time.After(20 * time.Millisecond):
		}
	}

	for _, c := range []struct {
		name      string
		committed bool
		to        sdk.Position
		want      int
	}{
		{"read_uncommitted to the end", false, sdk.End(), 19},
		{"read_committed to the end", true, sdk.End(), 15},
		{"read_committed to inside the aborted records", true, sdk.AtOffset(8), 13},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts []sdk.Option
			if c.committed {
				opts = append(opts, sdk.WithKgoOptions(kgo.FetchIsolationLevel(kgo.ReadCommitted())))
			}
			cons := newConsumer(t, append(opts, sdk.WithTopics("replay-txn"))...)
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			n := 0
			err := cons.Replay(rctx, "replay-txn", sdk.Start(), c.to, func(r *sdk.Record) error {
				if r.Attrs.IsControl() {
					return fmt.Errorf("a transaction marker at %d@%d", r.Partition, r.Offset)
				}
				n++
				return nil
			})
			if err != nil {
				t.Fatalf("replay after %d records: %v", n, err)
			}
			if n != c.want {
				t.Fatalf("replayed %d records, want %d", n, c.want)
			}
		})
	}
}
