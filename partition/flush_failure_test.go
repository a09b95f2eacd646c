package partition

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// failingFS is the operating system's filesystem with every fsync (of a
// file or a directory) for which fail returns an error failing with it.
func failingFS(fail func(path string) error) vfs.FS {
	return vfs.WithErrors(vfs.Default, func(op vfs.Op) error {
		if op.Kind == vfs.OpSync {
			return fail(op.Path)
		}
		return nil
	})
}

// openOnFS is openTest with the replica's files on fsys.
func openOnFS(t *testing.T, dir string, fsys vfs.FS, topicCfg map[string]string) *Replica {
	t.Helper()
	r, err := Open(Options{Dir: dir, Topic: "t", Partition: 0, Config: config.ResolveTopic(topicCfg, nil), FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	r.SetLeadership(true, 0)
	return r
}

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
	injected := errors.New("injected EIO")
	var fail atomic.Bool
	disk := failingFS(func(string) error {
		if fail.Load() {
			return injected
		}
		return nil
	})
	r := openOnFS(t, dir, disk, cfg)
	defer func() { r.Close() }()
	opts := batch.BuildOptions{ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0}
	first := build(t, opts, 3)
	if _, err := r.AppendLeader(first); err != nil {
		t.Fatal(err)
	}
	opts.BaseSequence = 3
	b := build(t, opts, 2)
	retry := append([]byte(nil), b...)

	fail.Store(true)
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

// TestFollowerFlushFailureAfterWrite: a follower (flush.messages=1) whose
// fsync fails after it wrote a replicated idempotent batch still records
// the batch in producer state (so that, leading later, it answers the
// producer's retry as a duplicate), and its log takes no more batches.
// Before the fix a follower append that failed applied nothing to producer
// state.
func TestFollowerFlushFailureAfterWrite(t *testing.T) {
	cfg := map[string]string{"flush.messages": "1"}
	injected := errors.New("injected EIO")
	var fail atomic.Bool
	disk := failingFS(func(path string) error {
		if fail.Load() && strings.HasSuffix(path, ".log") { // the segment, not the epoch checkpoint written before it
			return injected
		}
		return nil
	})
	leader, follower := openTest(t, t.TempDir(), nil, nil), openOnFS(t, t.TempDir(), disk, cfg)
	defer func() { leader.Close(); follower.Close() }()
	leader.SetLeadership(true, 1)
	follower.SetLeadership(false, 1)
	b := build(t, batch.BuildOptions{ProducerID: 9, ProducerEpoch: 0, BaseSequence: 0}, 4)
	retry := append([]byte(nil), b...)
	if _, err := leader.AppendLeader(b); err != nil {
		t.Fatal(err)
	}
	data, err := leader.Log().ReadBytes(0, 1<<20, leader.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if err := follower.AppendFollower(data, 0); !errors.Is(err, segment.ErrSyncFailed) || !errors.Is(err, injected) {
		t.Fatalf("follower append with a failing fsync: %v, want ErrSyncFailed wrapping the injected error", err)
	}
	fail.Store(false)
	if e := follower.Log().LogEndOffset(); e != 4 {
		t.Fatalf("follower log end %d, want 4 (the batch landed)", e)
	}
	h, err := batch.ParseHeader(retry)
	if err != nil {
		t.Fatal(err)
	}
	follower.appendMu.Lock()
	dup, err := follower.producers.Check(&h)
	follower.appendMu.Unlock()
	if err != nil || dup == nil || dup.FirstOffset != 0 {
		t.Fatalf("follower producer state after the failed flush: dup %+v, err %v; want the batch at 0", dup, err)
	}
	more := build(t, batch.NoProducer(), 1)
	if _, err := leader.AppendLeader(more); err != nil {
		t.Fatal(err)
	}
	next, err := leader.Log().ReadBytes(4, 1<<20, leader.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.AppendFollower(next, 0); !errors.Is(err, segment.ErrSyncFailed) {
		t.Fatalf("a later follower append on the offline log: %v, want ErrSyncFailed", err)
	}
	if e := follower.Log().LogEndOffset(); e != 4 {
		t.Fatalf("follower log end %d after an append on the offline log, want 4", e)
	}
}
