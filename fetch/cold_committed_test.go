package fetch_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

func listOffset(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, ts int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		return -1
	}
	return resp.Topics[0].Partitions[0].Offset
}

// TestColdReadCommitted: a topic whose aborted transactions are only in
// the bucket (their segments uploaded with their .txnindex and deleted
// locally) replays from offset 0 with read_committed without a record of
// them, and with read_uncommitted with every record.
func TestColdReadCommitted(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), testnode.WithTiering(100*time.Millisecond))
	ctx := proctest.Context(t, 2*time.Minute)
	admin := testnode.Client(t, n.KafkaAddr())
	const topic = "cold-rc"
	cfg := map[string]*string{"segment.bytes": new("2048"), "local.retention.bytes": new("1"), "remote.storage.enable": new("true")}
	resp, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	prod := testnode.Client(t, n.KafkaAddr(), kgo.TransactionalID("cold-rc"), kgo.DefaultProduceTopic(topic))
	pad := strings.Repeat("x", 200)
	var committed, all []string
	for i := range 12 {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%3 != 1
		for j := range 3 {
			v := fmt.Sprintf("t%d-%d-%s", i, j, pad)
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			all = append(all, v)
			if commit {
				committed = append(committed, v)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	lastMarker := listOffset(t, ctx, admin, topic, -1) - 1
	// Plain records after them, so that the segments holding every
	// transaction roll, go to the bucket and leave the local disk.
	plain := testnode.Client(t, n.KafkaAddr(), kgo.DefaultProduceTopic(topic))
	for i := range 30 {
		v := fmt.Sprintf("p%d-%s", i, pad)
		if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		all, committed = append(all, v), append(committed, v)
	}
	err = proctest.WaitFor(60*time.Second, func() bool { return listOffset(t, ctx, admin, topic, -4) > lastMarker })
	if err != nil {
		t.Fatalf("the transactions' segments never left the local disk: EARLIEST_LOCAL %d, last marker %d",
			listOffset(t, ctx, admin, topic, -4), lastMarker)
	}
	if got := consumeUntil(t, n.KafkaAddr(), topic, true, len(committed), 30*time.Second); !slices.Equal(got, committed) {
		t.Fatalf("cold read_committed: %d records, want %d\n got %.300q\nwant %.300q", len(got), len(committed), got, committed)
	}
	if got := consumeUntil(t, n.KafkaAddr(), topic, false, len(all), 30*time.Second); !slices.Equal(got, all) {
		t.Fatalf("cold read_uncommitted: %d records, want %d", len(got), len(all))
	}
}
