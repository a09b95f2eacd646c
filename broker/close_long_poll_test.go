package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/partition"
)

// TestCloseAnswersLongPolls: a node's graceful stop answers a Fetch parked
// in its long poll at once, with what it has, instead of holding the stop
// for the rest of the fetch's max wait (franz-go's default is 5 s, so half
// of the broker tests' node stops took 5 s more than their work). The
// fetch waits up to a minute, the stop gets 20 s: before, the stop ran out
// of time and forced the connection closed, and the fetch got no answer.
func TestCloseAnswersLongPolls(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 90*time.Second)
	const topic = "long-poll"
	cl := testnode.Client(t, n.KafkaAddr())
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var rep *partition.Replica
	if err := proctest.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		r, err := n.Replicas().Leader(topic, 0)
		rep = r
		return err == nil
	}); err != nil {
		t.Fatalf("the partition has no leader: %v", err)
	}

	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 60_000, 1, 1<<20
	req.SessionID, req.SessionEpoch = 0, 0 // a full fetch that opens a session
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, testnode.TopicID(t, cl, topic) // franz-go sends v13+: topics by id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	type answer struct {
		resp *kmsg.FetchResponse
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := req.RequestWith(ctx, cl)
		answered <- answer{resp, err}
	}()
	// The fetch's session watches the partition once it has read it, just
	// before it parks.
	if err := proctest.Poll(30*time.Second, 10*time.Millisecond, func() bool { return rep.Watchers() == 1 }); err != nil {
		select {
		case a := <-answered:
			t.Fatalf("the fetch did not reach its long poll: answered %+v %v", a.resp, a.err)
		default:
		}
		t.Fatalf("the fetch did not reach its long poll: %v (watchers %d)", err, rep.Watchers())
	}

	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Close(cctx); err != nil {
		t.Fatalf("close with a fetch parked for a minute: %v", err)
	}
	a := <-answered
	if a.err != nil {
		t.Fatalf("the parked fetch got no answer: %v", a.err)
	}
	if err := kerr.ErrorForCode(a.resp.ErrorCode); err != nil {
		t.Fatalf("the parked fetch: %v", err)
	}
	if len(a.resp.Topics) != 1 || len(a.resp.Topics[0].Partitions) != 1 || len(a.resp.Topics[0].Partitions[0].RecordBatches) != 0 {
		t.Fatalf("the parked fetch's answer: %+v, want its partition with no records", a.resp.Topics)
	}
}
