package txn

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeStateRecords feeds arbitrary keys and values of
// __transaction_state records (bytes that come from the log, replicated
// from other nodes or read back from the bucket) to the decoders: never a
// panic, and a value that decodes is written back by stateValue as the
// same state.
func FuzzDecodeStateRecords(f *testing.F) {
	m := &txnMeta{id: "etl-1", producerID: 7, epoch: 3, timeoutMs: 60000, state: kmsg.TransactionStateOngoing,
		start: 1700000000000, lastUpdate: 1700000000500,
		partitions: map[TopicPartition]struct{}{{"out", 0}: {}, {"out", 2}: {}, {"__consumer_offsets", 9}: {}}}
	f.Add(stateKey(m.id), stateValue(m))
	f.Add(stateKey(""), []byte{})
	f.Add([]byte{0, 1, 0, 3, 'a', 'b', 'c'}, []byte{0, 1})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, err := decodeStateKey(key)
		if err == nil {
			if again, err := decodeStateKey(stateKey(id)); err != nil || again != id {
				t.Fatalf("key %q: written back as %q, %v", id, again, err)
			}
		}
		got, err := decodeStateValue(id, value)
		if err != nil {
			return
		}
		again, err := decodeStateValue(id, stateValue(got))
		if err != nil {
			t.Fatalf("a decoded value does not decode once written back: %v", err)
		}
		if again.producerID != got.producerID || again.epoch != got.epoch || again.timeoutMs != got.timeoutMs ||
			again.state != got.state || again.start != got.start || again.lastUpdate != got.lastUpdate ||
			!maps.Equal(again.partitions, got.partitions) {
			t.Fatalf("written back as %+v, decoded as %+v", again, got)
		}
	})
}
