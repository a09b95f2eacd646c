package tiering

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering/coldread"
)

// txnBatches appends n transactional batches of 10 records for producer pid.
func (f *fixture) txnBatches(t *testing.T, pid int64, seq *int32, n int) {
	t.Helper()
	for i := range n {
		recs := make([]batch.Record, 10)
		for j := range recs {
			recs[j] = batch.Record{Value: fmt.Appendf(nil, "txn-%d-%d-%d", pid, i, j)}
		}
		opts := batch.NoProducer()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 0, *seq, true
		opts.FirstTimestamp = time.Now().UnixMilli()
		b, err := batch.Build(nil, opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.rep.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
		*seq += 10
	}
}

// TestTieringStopsAtTheLastStableOffset: segments of an open transaction
// stay local (uploads stop below the LSO); once it is aborted they go to
// the bucket with their .txnindex, which the cold reader serves.
func TestTieringStopsAtTheLastStableOffset(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(t, 30)
	var seq int32
	f.txnBatches(t, 7, &seq, 60) // several segments of one open transaction
	open := f.rep.Producers()[0].CurrentTxnStartOffset
	f.produce(t, 30)
	m := f.manager(t, nil)
	m.RunOnce(testCtx(t), true)
	recs := f.meta.ListRemoteSegments(f.topic.ID, 0)
	if len(recs) == 0 {
		t.Fatalf("nothing uploaded below the open transaction at %d", open)
	}
	for _, r := range recs {
		if r.EndOffset >= open {
			t.Fatalf("segment [%d, %d] uploaded past the last stable offset %d", r.BaseOffset, r.EndOffset, open)
		}
	}

	res, err := f.rep.AppendTxnMarker(partition.TxnMarker{ProducerID: 7, ProducerEpoch: 0, CoordinatorEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.produce(t, 40) // the marker's segment rolls too
	m.RunOnce(testCtx(t), true)
	recs = f.meta.ListRemoteSegments(f.topic.ID, 0)
	withTxn := 0
	for _, r := range recs {
		if ObjectKey(r, KindTxnIndex) != "" {
			withTxn++
			if r.BaseOffset > res.BaseOffset || r.EndOffset < res.BaseOffset {
				t.Fatalf("a .txnindex with segment [%d, %d], the marker at %d", r.BaseOffset, r.EndOffset, res.BaseOffset)
			}
		}
	}
	if withTxn != 1 || recs[len(recs)-1].EndOffset < res.BaseOffset {
		t.Fatalf("%d segments with a .txnindex (want 1); remote end %d, marker %d", withTxn, recs[len(recs)-1].EndOffset, res.BaseOffset)
	}
	if f.rep.LocalLogStartOffset() <= res.BaseOffset {
		t.Fatalf("local log start %d: the marker's segment should be local no more", f.rep.LocalLogStartOffset())
	}
	f.checkNoOrphans(t)

	cfg := coldread.Defaults()
	rd, err := coldread.New(cfg, f.fs, f.meta, f.store, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	want := []segment.AbortedTxn{{ProducerID: 7, FirstOffset: open, LastOffset: res.BaseOffset, LastStableOffset: res.BaseOffset + 1}}
	got, complete, err := rd.AbortedTxns(testCtx(t), "events", 0, 0, open+5)
	if err != nil || !complete || !reflect.DeepEqual(got, want) {
		t.Fatalf("remote aborted transactions: %+v complete %v err %v; want %+v", got, complete, err, want)
	}
	got, complete, err = rd.AbortedTxns(testCtx(t), "events", 0, res.BaseOffset+1, res.BaseOffset+50)
	if err != nil || complete || len(got) != 0 {
		t.Fatalf("after the marker: %+v complete %v err %v", got, complete, err)
	}
}
