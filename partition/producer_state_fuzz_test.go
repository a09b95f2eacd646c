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
		if err != nil || !reflect.DeepEqual(again.producers, got.producers) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
