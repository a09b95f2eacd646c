package replica

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// TestFetcherCutsOnDivergingEpoch is the follower's side of KIP-320, with
// a real replica: a DivergingEpoch answer cuts the tail the leader does not
// have, and the next fetch goes on from the new log end; an answer that
// cuts nothing sends the partition to the OffsetForLeaderEpoch check,
// paced; on a replica that leads again, nothing is cut and nothing is
// rechecked. (Since a new leader records its epoch at election, its
// OffsetForLeaderEpoch answer on becoming follower already cuts what an
// unclean election left, so the cluster test no longer reaches this path.)
func TestFetcherCutsOnDivergingEpoch(t *testing.T) {
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: "t", Config: config.ResolveTopic(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	appendN := func(epoch int32, n int) {
		t.Helper()
		rep.SetLeadership(true, epoch)
		recs := make([]batch.Record, n)
		for i := range recs {
			recs[i] = batch.Record{Value: []byte("v")}
		}
		b, err := batch.Build(nil, batch.NoProducer(), recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rep.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
	}
	appendN(1, 5) // epoch 1: 0-4
	appendN(2, 3) // epoch 2: 5-7, which the new leader never had
	rep.SetLeadership(false, 3)

	ft := &fetcher{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	k := replicaKey{"t", 0}
	p := &fetchPart{followed: followed{rep: rep, leader: 2, epoch: 3}, st: partState{backoff: defaultRetryBackoff}}
	answer := func(fetchedEpoch, epoch int32, end int64) {
		p.st.Step(time.Now(), event{kind: evSent, epoch: fetchedEpoch})
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = epoch, end
		ft.apply(k, p, &rp)
	}
	answer(2, 1, 5)
	if got := rep.Log().LogEndOffset(); got != 5 || rep.Log().LatestEpoch() != 1 {
		t.Fatalf("after DivergingEpoch {1 5}: log end %d, latest epoch %d; want 5 in epoch 1", got, rep.Log().LatestEpoch())
	}
	if p.st.needTruncate || !p.st.pausedUntil.IsZero() {
		t.Fatalf("a cut that made progress paused the partition: %+v", p.st)
	}

	before := time.Now()
	answer(1, 1, 5)
	if rep.Log().LogEndOffset() != 5 || !p.st.needTruncate || !p.st.pausedUntil.After(before) {
		t.Fatalf("an answer that cuts nothing: log end %d, %+v; want the OffsetForLeaderEpoch check, paced", rep.Log().LogEndOffset(), p.st)
	}

	p.st.needTruncate, p.st.pausedUntil = false, time.Time{}
	rep.SetLeadership(true, 4)
	answer(1, 0, 0)
	if rep.Log().LogEndOffset() != 5 || p.st.needTruncate {
		t.Fatalf("on a leader: log end %d, %+v; want no cut and no recheck", rep.Log().LogEndOffset(), p.st)
	}
}
