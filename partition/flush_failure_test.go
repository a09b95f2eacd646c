package partition

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// TestFlushFailureAfterWrite: with flush.messages=1 every append fsyncs.
// When that fsync fails after the batch was written, the append fails
// (KAFKA_STORAGE_ERROR at the protocol edge) but the batch is in the log,
// so producer state records it: the producer's retry is a duplicate, never
// written again. The fsync error is sticky: the log takes no more appends
// (LogErr says so, for the broker to move leadership away), and the
// retried batch is not written a second time. Before the fix the failed
// append left producer state without the batch, the next flush succeeded,
// and the retry was appended again at the next offset.
func TestFlushFailureAfterWrite(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]string{"flush.messages": "1"}
	r := openTest(t, dir, cfg, nil)
	defer func() { r.Close() }()
	opts := batch.BuildOptions{ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0}
	first := build(t, opts, 3)
	if _, err := r.AppendLeader(first); err != nil {
		t.Fatal(err)
	}
	opts.BaseSequence = 3
	b := build(t, opts, 2)
	retry := append([]byte(nil), b...)

	injected := errors.New("injected EIO")
	var fail atomic.Bool
	fail.Store(true)
	segment.SetFsyncFault(func(*os.File) error {
		if fail.Load() {
			return injected
		}
		return nil
	})
	t.Cleanup(func() { segment.SetFsyncFault(nil) })
	leo := r.Log().LogEndOffset()
	if _, err := r.AppendLeader(b); !errors.Is(err, segment.ErrSyncFailed) || !errors.Is(err, injected) {
		t.Fatalf("append with a failing fsync: %v, want ErrSyncFailed wrapping the injected error", err)
	}
	if got := r.Log().LogEndOffset(); got != leo+2 {
		t.Fatalf("log end %d after the write, want %d (the batch landed before the flush failed)", got, leo+2)
	}
	fail.Store(false) // the disk "recovers": a retried fsync would succeed

	h, err := batch.ParseHeader(retry)
	if err != nil {
		t.Fatal(err)
	}
	r.appendMu.Lock()
	dup, err := r.producers.Check(&h)
	r.appendMu.Unlock()
	if err != nil || dup == nil || dup.FirstOffset != leo {
		t.Fatalf("producer state after the failed flush: dup %+v, err %v; want the batch at %d recorded", dup, err, leo)
	}
	if err := r.LogErr(); !errors.Is(err, segment.ErrSyncFailed) {
		t.Fatalf("LogErr after the failed fsync: %v", err)
	}
	if _, err := r.AppendLeader(retry); !errors.Is(err, segment.ErrSyncFailed) {
		t.Fatalf("retry on the offline log: %v, want ErrSyncFailed", err)
	}
	other := build(t, batch.NoProducer(), 1)
	if _, err := r.AppendLeader(other); !errors.Is(err, segment.ErrSyncFailed) {
		t.Fatalf("another append on the offline log: %v, want ErrSyncFailed", err)
	}
	if got := r.Log().LogEndOffset(); got != leo+2 {
		t.Fatalf("log end %d, want %d: an offline log took another write", got, leo+2)
	}

	// Reopened (the broker restarted), the log holds the batch once and the
	// retry is answered as a duplicate.
	r.Close()
	r = openTest(t, dir, cfg, nil)
	res, err := r.AppendLeader(retry)
	if err != nil || !res.Duplicate || res.BaseOffset != leo {
		t.Fatalf("retry after reopening: %+v, %v; want a duplicate at %d", res, err, leo)
	}
	if got := r.Log().LogEndOffset(); got != leo+2 {
		t.Fatalf("log end %d after the retry, want %d", got, leo+2)
	}
}
