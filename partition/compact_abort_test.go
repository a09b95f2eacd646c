package partition

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/dumplog"
)

// readCommitted reads the log up to the last stable offset as a Kafka
// read_committed consumer does with the aborted transactions a Fetch of
// that range returns (Kafka's CompletedFetch): a producer enters the
// aborted set at its entry's first offset, its transactional batches are
// skipped while it is there, and its ABORT marker takes it out. It returns
// "key=value" of every record delivered, in offset order.
func readCommitted(t *testing.T, r *Replica) []string {
	t.Helper()
	from, lso := r.Log().LogStartOffset(), r.LastStableOffset()
	aborted := r.Log().AbortedTxns(from, lso)
	slices.SortFunc(aborted, func(a, b segment.AbortedTxn) int { return int(a.FirstOffset - b.FirstOffset) })
	inAbort := map[int64]bool{}
	var out []string
	for off := from; off < lso; {
		b, err := r.Log().ReadBytes(off, 1<<24, lso, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read at %d: %v", off, err)
		}
		err = batch.Split(b, func(h *batch.Header, raw []byte) error {
			off = h.NextOffset()
			for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
				inAbort[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			if h.Control() {
				if m, ok, err := batch.ParseEndTxnMarker(raw); err == nil && ok && !m.Commit {
					delete(inAbort, h.ProducerID)
				}
				return nil
			}
			if h.Transactional() && inAbort[h.ProducerID] {
				return nil
			}
			return batch.ForEachRecord(raw, 1<<20, func(rec *batch.Record) error {
				out = append(out, string(rec.Key)+"="+string(rec.Value))
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// dumpFile is `shale segment dump FILE`'s text output.
func dumpFile(t *testing.T, path string) string {
	t.Helper()
	var out bytes.Buffer
	if err := dumplog.Dump(&out, []string{path}, dumplog.Options{}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestCompactionRemovesAbortMarkers: the pass that empties an aborted
// transaction's batches keeps its ABORT marker and .txnindex entry; a later
// pass past delete.retention.ms removes both, and a read_committed read of
// the compacted log still delivers the producer's later committed records
// and none of the aborted ones, also after a crash between the .txnindex
// swap and the log's, and after a replay of producer state.
func TestCompactionRemovesAbortMarkers(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]string{"cleanup.policy": "compact", "segment.bytes": "300", "delete.retention.ms": "1000"}
	r := openTest(t, dir, cfg, nil)
	now := time.Now()
	ts := now.UnixMilli()
	plain := batch.NoProducer()
	plain.FirstTimestamp = ts
	app := func(b []byte) {
		t.Helper()
		if _, err := r.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
	}
	app(keyed(t, plain, "a", "a1"))
	app(keyed(t, txnOpts(7, 0, 0, ts), "b", "b-aborted", "x", "x-aborted"))
	abort := marker(t, r, TxnMarker{ProducerID: 7})
	// Producer 7's next transaction commits: a consumer that kept 7 in its
	// aborted set (an entry left without its marker) would skip it.
	app(keyed(t, txnOpts(7, 0, 2, ts), "c", "c1", "d", "d1"))
	marker(t, r, TxnMarker{ProducerID: 7, Commit: true})
	for i := range 12 { // roll segments, so that the marker's is cleanable
		app(keyed(t, plain, fmt.Sprintf("f%d", i), "x"))
	}
	var markerBase int64 = -1
	for _, s := range r.Log().Segments() {
		if s.BaseOffset <= abort.BaseOffset && abort.BaseOffset < s.NextOffset && !s.Active {
			markerBase = s.BaseOffset
		}
	}
	if markerBase < 0 || r.LastStableOffset() != r.Log().LogEndOffset() {
		t.Fatalf("marker at %d not in a closed segment below the lso %d: %+v", abort.BaseOffset, r.LastStableOffset(), r.Log().Segments())
	}
	logPath := filepath.Join(dir, fmt.Sprintf("%020d.log", markerBase))
	txnPath := filepath.Join(dir, fmt.Sprintf("%020d.txnindex", markerBase))
	want := []string{"a=a1", "c=c1", "d=d1"}
	for i := range 12 {
		want = append(want, fmt.Sprintf("f%d=x", i))
	}
	check := func(when string) {
		t.Helper()
		got := readCommitted(t, r)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: read_committed delivers %v, want %v", when, got, want)
		}
	}
	check("before compaction")
	late := now.Add(time.Hour) // past delete.retention.ms
	// Pass 1 empties the aborted batches: the marker and its entry stay.
	if _, err := r.Compact(late); err != nil {
		t.Fatal(err)
	}
	vals, markers := compactedValues(t, r)
	if vals["b"] != nil || vals["x"] != nil {
		t.Errorf("aborted records left after the first pass: b %q x %q", vals["b"], vals["x"])
	}
	if want := []string{"7:false", "7:true"}; fmt.Sprint(markers) != fmt.Sprint(want) {
		t.Errorf("markers after the first pass: %v, want %v", markers, want)
	}
	if got := r.Log().AbortedTxns(0, r.Log().LogEndOffset()); len(got) != 1 || got[0].LastOffset != abort.BaseOffset {
		t.Errorf("aborted transactions after the first pass: %+v, want the one ended at %d", got, abort.BaseOffset)
	}
	entry := fmt.Sprintf("producerId: 7 firstOffset: 1 lastOffset: %d", abort.BaseOffset)
	if d := dumpFile(t, txnPath); !strings.Contains(d, entry) {
		t.Errorf("dump of the .txnindex after the first pass:\n%s\nwant %q", d, entry)
	}
	check("after the first pass")
	before, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}

	// Pass 2 sees no batch of the aborted transaction: both go.
	if _, err := r.Compact(late); err != nil {
		t.Fatal(err)
	}
	_, markers = compactedValues(t, r)
	if want := []string{"7:true"}; fmt.Sprint(markers) != fmt.Sprint(want) {
		t.Errorf("markers after the second pass: %v, want %v", markers, want)
	}
	if got := r.Log().AbortedTxns(0, r.Log().LogEndOffset()); len(got) != 0 {
		t.Errorf("aborted transactions after the second pass: %+v, want none", got)
	}
	if _, err := os.Stat(txnPath); !os.IsNotExist(err) {
		t.Errorf("the .txnindex without entries is still there: %v", err)
	}
	if d := dumpFile(t, logPath); strings.Contains(d, "endTxnMarker: ABORT") {
		t.Errorf("dump of the cleaned segment still has the ABORT marker:\n%s", d)
	}
	check("after the second pass")

	// A kill between the .txnindex swap and the log's leaves the new
	// .txnindex (here none), the old .log and the cleaned one as .log.swap.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(logPath, logPath+".swap"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, before, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, ".clean-shutdown")); err != nil {
		t.Fatal(err)
	}
	removeSnapshots(t, dir) // and producer state replayed from the log start
	r = openTest(t, dir, cfg, nil)
	defer r.Close()
	_, markers = compactedValues(t, r)
	if want := []string{"7:true"}; fmt.Sprint(markers) != fmt.Sprint(want) {
		t.Errorf("markers after the interrupted swap: %v, want %v", markers, want)
	}
	if got := r.Log().AbortedTxns(0, r.Log().LogEndOffset()); len(got) != 0 {
		t.Errorf("aborted transactions after the interrupted swap: %+v, want none", got)
	}
	check("after the interrupted swap and a replay")
}
