package partition

import (
	"errors"
	"reflect"
	"testing"

	"github.com/shale-io/shale/segment/batch"
)

// FuzzDecodeProducerState: a producer-state snapshot, read from local disk
// or from the bucket (a replica rebuilt from the remote tail). Any input
// either fails with ErrBadSnapshot or decodes to a state that encodes and
// decodes back to itself.
func FuzzDecodeProducerState(f *testing.F) {
	ps := NewProducerState()
	for i, id := range []int64{7, 9} {
		h := batch.Header{BaseOffset: int64(10 * i), LastOffsetDelta: 4, ProducerID: id, ProducerEpoch: 1, BaseSequence: 0}
		ps.Update(&h)
	}
	f.Add(ps.Encode())
	th := batch.Header{BaseOffset: 30, LastOffsetDelta: 1, ProducerID: 11, ProducerEpoch: 2, BaseSequence: 0, Attributes: 0x10}
	ps.Update(&th)
	mh := batch.Header{BaseOffset: 32, ProducerID: 9, ProducerEpoch: 2, BaseSequence: -1, Attributes: 0x30}
	ps.EndTxn(&mh, batch.EndTxnMarker{CoordinatorEpoch: 3})
	f.Add(ps.Encode())
	f.Add(NewProducerState().Encode())
	f.Add([]byte("SHPS"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeProducerState(b)
		if err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("error %v does not wrap ErrBadSnapshot", err)
			}
			return
		}
		again, err := DecodeProducerState(got.Encode())
		if err != nil || !reflect.DeepEqual(again.producers, got.producers) || !reflect.DeepEqual(again.open, got.open) {
			t.Fatalf("round trip: %v", err)
		}
		for id, e := range got.producers {
			if off, ok := got.open[id]; ok != (e.TxnFirstOffset >= 0) || (ok && off != e.TxnFirstOffset) {
				t.Fatalf("producer %d: open transactions %v disagree with its entry %+v", id, got.open, e)
			}
		}
	})
}
