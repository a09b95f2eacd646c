package share

import (
	"reflect"
	"testing"
)

func testSnapshot() Snapshot {
	return Snapshot{StateEpoch: 2, LeaderEpoch: 5, StartOffset: 40, Batches: []StateBatch{
		{40, 44, Available, 1}, {45, 45, Acknowledged, 2}, {46, 50, Archived, 5}}}
}

// TestStateRecordsRoundTrip: snapshot and update records decode to what
// was written, and replay applies them in order.
func TestStateRecordsRoundTrip(t *testing.T) {
	k := StateKey{Group: "g", TopicID: [16]byte{1, 2, 3}, Partition: 7}
	rec, err := DecodeStateRecord(EncodeStateKey(k, false), EncodeSnapshotValue(3, testSnapshot()))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Key != k || rec.Update || rec.SnapshotEpoch != 3 || !reflect.DeepEqual(rec.Snapshot, testSnapshot()) {
		t.Fatalf("decoded %+v", rec)
	}
	states := map[StateKey]*Snapshot{}
	Apply(states, rec)
	upd := Snapshot{LeaderEpoch: 6, StartOffset: -1, Batches: []StateBatch{{42, 43, Acknowledged, 1}}}
	urec, err := DecodeStateRecord(EncodeStateKey(k, true), EncodeUpdateValue(3, upd))
	if err != nil {
		t.Fatal(err)
	}
	if !urec.Update || urec.Snapshot.StartOffset != -1 {
		t.Fatalf("update decoded %+v", urec)
	}
	Apply(states, urec)
	want := []StateBatch{{40, 41, Available, 1}, {42, 43, Acknowledged, 1}, {44, 44, Available, 1}, {45, 45, Acknowledged, 2}, {46, 50, Archived, 5}}
	if got := states[k]; got.LeaderEpoch != 6 || got.StartOffset != 40 || !reflect.DeepEqual(got.Batches, want) {
		t.Fatalf("after update %+v", got)
	}
	tomb, err := DecodeStateRecord(EncodeStateKey(k, false), nil)
	if err != nil || !tomb.Tombstone {
		t.Fatalf("tombstone %+v %v", tomb, err)
	}
	Apply(states, tomb)
	if len(states) != 0 {
		t.Fatalf("state left after a tombstone: %v", states)
	}
}

// FuzzDecodeStateRecord feeds arbitrary __share_group_state keys and
// values (bytes read from the log, replicated from other nodes or from
// the bucket): never a panic, and what decodes is written back the same.
func FuzzDecodeStateRecord(f *testing.F) {
	k := StateKey{Group: "g", TopicID: [16]byte{9}, Partition: 1}
	f.Add(EncodeStateKey(k, false), EncodeSnapshotValue(1, testSnapshot()))
	f.Add(EncodeStateKey(k, true), EncodeUpdateValue(1, testSnapshot()))
	f.Add([]byte{0, 0, 0, 1, 'g'}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		rec, err := DecodeStateRecord(key, value)
		if err != nil {
			return
		}
		var v []byte
		if rec.Update {
			v = EncodeUpdateValue(rec.SnapshotEpoch, rec.Snapshot)
		} else {
			v = EncodeSnapshotValue(rec.SnapshotEpoch, rec.Snapshot)
		}
		if rec.Tombstone {
			v = nil
		}
		again, err := DecodeStateRecord(EncodeStateKey(rec.Key, rec.Update), v)
		if err != nil {
			t.Fatalf("a decoded record does not decode once written back: %v", err)
		}
		if !reflect.DeepEqual(again, rec) {
			t.Fatalf("written back as %+v, decoded as %+v", again, rec)
		}
		states := map[StateKey]*Snapshot{}
		Apply(states, rec)
		if s := states[rec.Key]; s != nil {
			Restore(*s, Limits{LockDurationMs: 1, DeliveryLimit: 2, MaxInFlight: 10})
		}
	})
}
