package segment

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestIndexAppendReadsOnePage: appending index entries to an active
// segment's preallocated (sparse) indexes brings into the page cache the
// pages that hold the entries, not a readahead window of the preallocated
// zeros. Before the mappings were advised MADV_RANDOM, the first entry's
// page fault read around it (ext4 zeroing a large folio of the hole): 1,000
// partitions x 2 indexes x that window, re-read whenever memory pressure
// dropped it, was most of a node's CPU under produce spread over 1,000
// partitions (issue 23).
func TestIndexAppendReadsOnePage(t *testing.T) {
	cfg := testConfig(newFakeClock())
	cfg.SegmentIndexBytes = 10 << 20
	cfg.IndexIntervalBytes = 1 // an entry in each index for every batch
	l := openLog(t, t.TempDir(), cfg)
	defer l.Close()
	for i := range 20 {
		mustAppend(t, l, buildBatch(t, batchSpec{records: 1, firstTs: int64(i), valueSize: 100}), 0)
	}
	l.mu.RLock()
	s := l.mu.segments[len(l.mu.segments)-1]
	idx, tidx := s.idx.data, s.tidx.data
	nIdx, nTidx := s.idx.n, s.tidx.n
	l.mu.RUnlock()
	if nIdx < 10 || nTidx < 10 {
		t.Fatalf("only %d offset and %d time index entries after 20 batches", nIdx, nTidx)
	}
	for name, m := range map[string][]byte{"offset index": idx, "time index": tidx} {
		if len(m) < cfg.SegmentIndexBytes-12 {
			t.Fatalf("%s mapped %d bytes, want it preallocated to about %d", name, len(m), cfg.SegmentIndexBytes)
		}
		vec := make([]byte, (len(m)+unix.Getpagesize()-1)/unix.Getpagesize())
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Fatalf("mincore: %v", errno)
		}
		resident := 0
		for _, v := range vec {
			resident += int(v & 1)
		}
		// 20 entries of 8 or 12 bytes fit in the first page.
		if resident > 1 {
			t.Errorf("%s: %d of its %d pages in the page cache after 20 entries in its first page", name, resident, len(vec))
		}
	}
}
