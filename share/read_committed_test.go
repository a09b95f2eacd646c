package share

import (
	"reflect"
	"testing"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// TestAbortedBatches: of a read, only the data batches of an aborted
// transaction are named (Kafka's fetchAbortedTransactionRecordBatches):
// not its ABORT marker, not the same producer's next transaction past the
// marker, not another producer's batches, not a plain batch.
func TestAbortedBatches(t *testing.T) {
	var data []byte
	add := func(base int64, producer int64, txn bool, n int) {
		t.Helper()
		opts := batch.NoProducer()
		opts.BaseOffset = base
		if producer >= 0 {
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = producer, 0, 0, txn
		}
		recs := make([]batch.Record, n)
		for i := range recs {
			recs[i].Value = []byte("v")
		}
		var err error
		if data, err = batch.Build(data, opts, recs); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 7, true, 3) // producer 7's aborted transaction: 0-2
	marker, err := batch.BuildEndTxnMarker(nil, 7, 0, 0, batch.EndTxnMarker{Commit: false})
	if err != nil {
		t.Fatal(err)
	}
	marker[7] = 3 // base offset 3: the ABORT marker
	data = append(data, marker...)
	add(4, 8, true, 2)   // producer 8, committed
	add(6, 7, true, 2)   // producer 7's next transaction
	add(8, -1, false, 1) // plain
	add(9, 9, false, 1)  // idempotent, not transactional, of a producer with an aborted transaction
	bs, err := spans(data)
	if err != nil || len(bs) != 6 {
		t.Fatalf("spans: %v %d", err, len(bs))
	}
	txns := []segment.AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4},
		{ProducerID: 9, FirstOffset: 9, LastOffset: 12, LastStableOffset: 13}}
	got := abortedBatches(data, bs, txns)
	if want := []batchSpan{bs[0]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	if got := abortedBatches(data, bs, nil); got != nil {
		t.Fatalf("no aborted transactions: %+v", got)
	}
}
