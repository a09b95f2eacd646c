package partition

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// compactedValues reads the whole log back: the value of every data record
// by key, and the markers left (producer id and COMMIT or ABORT).
func compactedValues(t *testing.T, r *Replica) (vals map[string][]string, markers []string) {
	t.Helper()
	vals = map[string][]string{}
	var b []byte
	for off := r.Log().LogStartOffset(); off < r.Log().LogEndOffset(); {
		part, err := r.Log().ReadBytes(off, 1<<24, r.Log().LogEndOffset(), true)
		if err != nil || len(part) == 0 {
			t.Fatalf("read at %d: %v", off, err)
		}
		next := off
		batch.Split(part, func(h *batch.Header, _ []byte) error { next = h.NextOffset(); return nil })
		b, off = append(b, part...), next
	}
	err := batch.Split(b, func(h *batch.Header, raw []byte) error {
		if h.Control() {
			if m, ok, err := batch.ParseEndTxnMarker(raw); err == nil && ok {
				markers = append(markers, fmt.Sprintf("%d:%v", h.ProducerID, m.Commit))
			}
			return nil
		}
		return batch.ForEachRecord(raw, 1<<20, func(rec *batch.Record) error {
			vals[string(rec.Key)] = append(vals[string(rec.Key)], string(rec.Value))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return vals, markers
}

func keyed(t *testing.T, opts batch.BuildOptions, kv ...string) []byte {
	t.Helper()
	var recs []batch.Record
	for i := 0; i+1 < len(kv); i += 2 {
		recs = append(recs, batch.Record{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	b, err := batch.Build(nil, opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompactionWithTransactions: an aborted transaction's records go and
// never win a key; a committed transaction's latest values stay; a batch
// of the transaction still open is not touched (the cleaner stops at the
// last stable offset); a COMMIT marker goes once past delete.retention.ms
// with none of its records left, an ABORT marker once a pass saw none of
// its aborted batches; and producer state
// rebuilt from the cleaned log has no transaction open but the real one.
func TestCompactionWithTransactions(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]string{"cleanup.policy": "compact", "segment.bytes": "300", "delete.retention.ms": "1000"}
	r := openTest(t, dir, cfg, nil)
	now := time.Now()
	ts := now.UnixMilli()
	plain := batch.NoProducer()
	plain.FirstTimestamp = ts
	tx := func(pid int64, seq int32) batch.BuildOptions {
		o := txnOpts(pid, 0, seq, ts)
		return o
	}
	app := func(b []byte) {
		t.Helper()
		if _, err := r.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
	}
	app(keyed(t, plain, "a", "a1", "b", "b1"))
	// Producer 7 commits a2, then its second transaction (b2) is aborted.
	app(keyed(t, tx(7, 0), "a", "a2"))
	marker(t, r, TxnMarker{ProducerID: 7, Commit: true})
	app(keyed(t, tx(7, 1), "b", "b2"))
	marker(t, r, TxnMarker{ProducerID: 7})
	// Producer 8 commits c1, then a plain write overwrites it: its
	// transaction has no record left, so its COMMIT marker may go.
	app(keyed(t, tx(8, 0), "c", "c1"))
	marker(t, r, TxnMarker{ProducerID: 8, Commit: true})
	app(keyed(t, plain, "c", "c2"))
	for i := range 10 { // fill segments
		app(keyed(t, plain, fmt.Sprintf("f%d", i), "x"))
	}
	// Producer 9's transaction stays open: b9 is past the last stable offset.
	open := appendTxn(t, r, 9, 0, 0, 1)
	for i := range 10 {
		app(keyed(t, plain, fmt.Sprintf("g%d", i), "y"))
	}
	if lso := r.LastStableOffset(); lso != open.BaseOffset {
		t.Fatalf("lso %d, want %d", lso, open.BaseOffset)
	}
	if len(r.Log().Segments()) < 4 {
		t.Fatalf("only %d segments", len(r.Log().Segments()))
	}

	if _, err := r.Compact(now); err != nil {
		t.Fatal(err)
	}
	vals, markers := compactedValues(t, r)
	if got := vals["a"]; len(got) != 1 || got[0] != "a2" {
		t.Errorf("a: %q, want the committed a2", got)
	}
	if got := vals["b"]; len(got) != 1 || got[0] != "b1" {
		t.Errorf("b: %q, want b1 (b2 was aborted)", got)
	}
	if got := vals["c"]; len(got) != 1 || got[0] != "c2" {
		t.Errorf("c: %q, want c2", got)
	}
	if want := []string{"7:true", "7:false", "8:true"}; fmt.Sprint(markers) != fmt.Sprint(want) {
		t.Errorf("markers before delete.retention.ms: %v, want %v", markers, want)
	}
	if got := vals["k0"]; len(got) != 1 {
		t.Errorf("open transaction's record: %q", got) // the record of producer 9 (appendTxn's key k0)
	}

	// Past delete.retention.ms: 8's COMMIT goes (none of its records left),
	// 7's stays (a2 is left), and 7's ABORT goes with its .txnindex entry
	// (the first pass emptied its batches; this one saw none).
	if _, err := r.Compact(now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, markers = compactedValues(t, r)
	if want := []string{"7:true"}; fmt.Sprint(markers) != fmt.Sprint(want) {
		t.Errorf("markers past delete.retention.ms: %v, want %v", markers, want)
	}
	if got := r.Log().AbortedTxns(0, r.Log().LogEndOffset()); len(got) != 0 {
		t.Errorf("aborted transactions after compaction: %+v, want none", got)
	}

	// Producer state replayed from the cleaned log: only 9's transaction is open.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	removeSnapshots(t, dir)
	r = openTest(t, dir, cfg, nil)
	defer r.Close()
	for _, p := range r.Producers() {
		if want := map[int64]int64{9: open.BaseOffset}[p.ProducerID]; (p.CurrentTxnStartOffset >= 0 || want != 0) && p.CurrentTxnStartOffset != want {
			t.Errorf("after the replay, producer %d has a transaction open at %d", p.ProducerID, p.CurrentTxnStartOffset)
		}
	}
	if lso := r.LastStableOffset(); lso != open.BaseOffset {
		t.Errorf("lso after the replay %d, want %d", lso, open.BaseOffset)
	}
}

func removeSnapshots(t *testing.T, dir string) {
	t.Helper()
	for _, off := range listSnapshots(vfs.Default, dir) {
		if err := removeFile(snapshotName(dir, off)); err != nil {
			t.Fatal(err)
		}
	}
}

func removeFile(p string) error { return os.Remove(p) }
