package restore

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/segment/batch"
)

func commitRecord(group, topic string, p int32, offset int64, tombstone bool) batch.Record {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, p
	r := batch.Record{Key: k.AppendTo(nil)}
	if !tombstone {
		v := kmsg.NewOffsetCommitValue()
		v.Version, v.Offset, v.LeaderEpoch = 3, offset, 7
		r.Value = v.AppendTo(nil)
	}
	return r
}

// offsetsLog builds a __consumer_offsets log: plain commits, a
// tombstone, a group metadata record, a committed and an aborted
// transaction's commits.
func offsetsLog(t testing.TB) []byte {
	t.Helper()
	var b []byte
	var err error
	at := int64(0)
	add := func(opts batch.BuildOptions, recs ...batch.Record) {
		opts.BaseOffset = at
		if b, err = batch.Build(b, opts, recs); err != nil {
			t.Fatal(err)
		}
		at += int64(len(recs))
	}
	gk := kmsg.NewGroupMetadataKey()
	gk.Version, gk.Group = 2, "g1"
	add(batch.NoProducer(), batch.Record{Key: gk.AppendTo(nil), Value: []byte{0, 3}},
		commitRecord("g1", "events", 0, 10, false), commitRecord("g1", "events", 1, 20, false))
	add(batch.NoProducer(), commitRecord("g1", "events", 0, 15, false), commitRecord("g2", "events", 0, 5, false))
	add(batch.NoProducer(), commitRecord("g2", "events", 0, 0, true)) // g2 deletes its offset
	txn := func(pid int64) batch.BuildOptions {
		o := batch.NoProducer()
		o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Transactional = pid, 0, 0, true
		return o
	}
	add(txn(100), commitRecord("g3", "events", 0, 30, false))
	add(txn(200), commitRecord("g1", "events", 1, 99, false)) // aborted below
	add(txn(100), commitRecord("g3", "other", 0, 31, false))
	for _, m := range []struct {
		pid    int64
		commit bool
	}{{100, true}, {200, false}} {
		if b, err = batch.BuildEndTxnMarker(b, m.pid, 0, 0, batch.EndTxnMarker{Commit: m.commit}); err != nil {
			t.Fatal(err)
		}
		batch.SetBaseOffset(b[len(b)-batch.LogOverhead-int(mustHeader(t, b).Length):], at) // the last batch
		at++
	}
	return b
}

func mustHeader(t testing.TB, b []byte) batch.Header {
	t.Helper()
	var last batch.Header
	if err := batch.Split(b, func(h *batch.Header, _ []byte) error { last = *h; return nil }); err != nil {
		t.Fatal(err)
	}
	return last
}

// TestOffsetLog: the replay keeps the last commit of each key, drops a
// tombstoned one and an aborted transaction's, keeps a committed
// transaction's, and skips other records.
func TestOffsetLog(t *testing.T) {
	l := NewOffsetLog()
	if err := l.Add(offsetsLog(t)); err != nil {
		t.Fatal(err)
	}
	got := l.Offsets("events")
	want := []GroupOffset{
		{Group: "g1", Topic: "events", Partition: 0, Offset: 15, LeaderEpoch: 7},
		{Group: "g1", Topic: "events", Partition: 1, Offset: 20, LeaderEpoch: 7},
		{Group: "g3", Topic: "events", Partition: 0, Offset: 30, LeaderEpoch: 7},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("offsets %+v, want %+v", got, want)
	}
	if all := l.Offsets(""); len(all) != 4 {
		t.Fatalf("all offsets %+v, want 4", all)
	}
}

// TestOffsetLogRefusesACorruptBatch: a flipped byte fails the CRC.
func TestOffsetLogRefusesACorruptBatch(t *testing.T) {
	b := offsetsLog(t)
	b[len(b)/2] ^= 0xff
	if err := NewOffsetLog().Add(b); err == nil {
		t.Fatal("a corrupt batch replayed without an error")
	}
}
