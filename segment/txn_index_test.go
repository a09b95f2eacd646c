package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestTxnIndexFileLayout: an entry is Kafka's AbortedTxn version 0, 34
// bytes, big endian.
func TestTxnIndexFileLayout(t *testing.T) {
	a := AbortedTxn{ProducerID: 0x0102030405060708, FirstOffset: 9, LastOffset: 0x10, LastStableOffset: 0x11}
	want := []byte{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x11}
	if got := a.AppendTo(nil); !bytes.Equal(got, want) || len(got) != AbortedTxnSize {
		t.Fatalf("encoding %x, want %x", got, want)
	}
	got, err := DecodeTxnIndex(want)
	if err != nil || len(got) != 1 || got[0] != a {
		t.Fatalf("decode: %+v %v", got, err)
	}
	for name, b := range map[string][]byte{
		"short":     want[:33],
		"version 1": append([]byte{0, 1}, want[2:]...),
		"unordered": append(append([]byte(nil), want...), want...),
	} {
		if _, err := DecodeTxnIndex(b); !errors.Is(err, ErrCorruption) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestTxnIndexLifecycle: entries go to the segment holding the marker,
// the read_committed query returns those overlapping the range and stops
// at the first whose last stable offset reaches it, and the files follow
// the log through reopen, truncation and retention.
func TestTxnIndexLifecycle(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	cfg := testConfig(clock)
	l := openLog(t, dir, cfg)
	for i := 0; i < 10; i++ { // offsets 0-9
		mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 0)
	}
	a1 := AbortedTxn{ProducerID: 1, FirstOffset: 2, LastOffset: 4, LastStableOffset: 3} // producer 2 open from 3
	a2 := AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 6, LastStableOffset: 7}
	for _, a := range []AbortedTxn{a1, a2} {
		if err := l.AppendAbortedTxn(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 3, FirstOffset: 5, LastOffset: 5, LastStableOffset: 6}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("an entry before the last: %v", err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ { // offsets 10-14 in segment 10
		mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 0)
	}
	a3 := AbortedTxn{ProducerID: 1, FirstOffset: 8, LastOffset: 12, LastStableOffset: 13}
	if err := l.AppendAbortedTxn(a3); err != nil {
		t.Fatal(err)
	}
	check := func(from, upTo int64, want ...AbortedTxn) {
		t.Helper()
		if got := l.AbortedTxns(from, upTo); !reflect.DeepEqual(got, want) {
			t.Fatalf("AbortedTxns(%d, %d) = %+v, want %+v", from, upTo, got, want)
		}
	}
	check(0, 2)     // nothing yet in range; a1's LSO 3 >= 2 stops the scan
	check(0, 3, a1) // a1 starts at 2
	check(0, 15, a1, a2, a3)
	check(5, 15, a2, a3) // a1 ended at 4
	check(7, 10, a3)     // a2 ended at 6; its LSO 7 < 10, so the scan goes on to a3, which starts at 8
	check(10, 15, a3)
	check(13, 15)

	if got := l.SegmentAbortedTxns(0); !reflect.DeepEqual(got, []AbortedTxn{a1, a2}) {
		t.Fatalf("segment 0: %+v", got)
	}
	if st, err := os.Stat(filepath.Join(dir, fileName(0, txnIndexSuffix))); err != nil || st.Size() != 2*AbortedTxnSize {
		t.Fatalf("segment 0 .txnindex: %v %v", st, err)
	}

	// Reopen, clean and after a crash.
	l.Close()
	l = openLog(t, dir, cfg)
	check(0, 15, a1, a2, a3)
	l.closeForCrashTest()
	l = openLog(t, dir, cfg)
	check(0, 15, a1, a2, a3)

	// Truncation drops the entries whose marker is cut, with the files of
	// the cut segments.
	if err := l.Truncate(6); err != nil {
		t.Fatal(err)
	}
	check(0, 15, a1)
	if _, err := os.Stat(filepath.Join(dir, fileName(10, txnIndexSuffix))); !os.IsNotExist(err) {
		t.Fatalf("the cut segment's .txnindex: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, fileName(0, txnIndexSuffix))); err != nil || st.Size() != AbortedTxnSize {
		t.Fatalf("segment 0 .txnindex after the cut: %v %v", st, err)
	}
	if err := l.DropAbortedTxnsFrom(0); err != nil {
		t.Fatal(err)
	}
	check(0, 15)
	if _, err := os.Stat(filepath.Join(dir, fileName(0, txnIndexSuffix))); !os.IsNotExist(err) {
		t.Fatalf("an emptied .txnindex stays: %v", err)
	}

	// Retention deletes it with its segment.
	if err := l.AppendAbortedTxn(a1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 0)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteSegmentsBefore(11); err != nil {
		t.Fatal(err)
	}
	if err := l.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(cfg.FileDeleteDelay + 1)
	if err := l.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "*"+txnIndexSuffix+"*")); len(ents) != 0 {
		t.Fatalf("transaction index files left after retention: %v", ents)
	}
	l.Close()
}

// TestTxnIndexUnreadableDropped: a torn .txnindex is dropped at open,
// with the log opening as before.
func TestTxnIndexUnreadableDropped(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	l := openLog(t, dir, cfg)
	mustAppend(t, l, buildBatch(t, batchSpec{records: 3}), 0)
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	p := filepath.Join(dir, fileName(0, txnIndexSuffix))
	if err := os.Truncate(p, 20); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, dir, cfg)
	defer l.Close()
	if got := l.AbortedTxns(0, 3); got != nil {
		t.Fatalf("entries from a torn index: %+v", got)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("torn index kept: %v", err)
	}
}

// FuzzDecodeTxnIndex: a .txnindex read from disk or from the bucket
// either fails with ErrCorruption or decodes to entries that encode back
// to the same bytes.
func FuzzDecodeTxnIndex(f *testing.F) {
	f.Add(AbortedTxn{ProducerID: 1, FirstOffset: 2, LastOffset: 4, LastStableOffset: 5}.AppendTo(nil))
	f.Add([]byte{})
	f.Add(make([]byte, 33))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeTxnIndex(b)
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var again []byte
		for _, a := range got {
			again = a.AppendTo(again)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("round trip %x -> %x", b, again)
		}
	})
}

// TestTxnIndexStrayEntriesDroppedAtOpen: entries whose marker the
// recovered segment does not hold (a crash cut the .log after them) are
// dropped from memory and from the file at open.
func TestTxnIndexStrayEntriesDroppedAtOpen(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(newFakeClock())
	l := openLog(t, dir, cfg)
	mustAppend(t, l, buildBatch(t, batchSpec{records: 3}), 0) // 0-2
	keep := AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2}
	if err := l.AppendAbortedTxn(keep); err != nil {
		t.Fatal(err)
	}
	l.Close()
	stray := AbortedTxn{ProducerID: 2, FirstOffset: 2, LastOffset: 9, LastStableOffset: 10}
	p := filepath.Join(dir, fileName(0, txnIndexSuffix))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(stray.AppendTo(nil))
	f.Close()
	l = openLog(t, dir, cfg)
	defer l.Close()
	if got := l.AbortedTxns(0, 20); !reflect.DeepEqual(got, []AbortedTxn{keep}) {
		t.Fatalf("entries after open %+v, want only %+v", got, keep)
	}
	if st, err := os.Stat(p); err != nil || st.Size() != AbortedTxnSize {
		t.Fatalf("file after open: %v %v", st, err)
	}
	// The next marker's entry goes after the kept one, not refused by the stray.
	mustAppend(t, l, buildBatch(t, batchSpec{records: 1}), 0)
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 3, FirstOffset: 3, LastOffset: 3, LastStableOffset: 4}); err != nil {
		t.Fatal(err)
	}
}
