package partition

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/batch"
)

// crashCopy copies a partition directory as a crash would leave it while
// the replica is open (the page cache survives kill -9): every file as it
// is now, no clean-shutdown marker, no checkpoint written by Close.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		crashCopyFile(t, filepath.Join(dir, e.Name()), filepath.Join(to, e.Name()))
	}
	return to
}

// crashCopyFile copies the file from to the file to as it is now. A file
// gone since the caller listed its directory is left out: it is a temp
// file renamed onto its target meanwhile (the log's background flusher's
// recovery-point.tmp, the shared HW checkpoint's), and the copy holds the
// target as read, as a crash before or after the rename would leave it.
func crashCopyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReopenAfterCrashKeepsCheckpointedHW is issue 15 item 4 on one
// replica: a leader with ISR {1} and min.insync.replicas=2 has records
// above its high watermark (acks=1 writes); after a crash it must reopen
// as a follower with the checkpointed high watermark, not its log end, so
// that no consumer or tiering sees records that were never committed, and
// an idempotent retry of one of them is not acknowledged as committed when
// it leads again. On the code before the checkpoint it reopened leading
// with HW = LEO.
func TestReopenAfterCrashKeepsCheckpointedHW(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]string{"min.insync.replicas": "2"}
	r := openFollower(t, dir, cfg, nil)
	defer r.Close()
	r.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	r.SetLeadership(true, 1)
	now := time.Now()
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 5)); err != nil {
		t.Fatal(err)
	}
	if hw, err := r.FollowerFetch(2, 5, 1, now); err != nil || hw != 5 {
		t.Fatalf("follower fetch at 5: hw %d, %v", hw, err)
	}
	if err := r.MaybeFlush(); err != nil { // the periodic checkpoint: first one due at once
		t.Fatal(err)
	}
	if got := r.CheckpointedHW(); got != 5 {
		t.Fatalf("checkpointed %d, want 5", got)
	}
	// The follower drops out; acks=1 writes go above the high watermark,
	// one of them an idempotent producer's.
	r.SetAssignment(1, []int32{1, 2}, []int32{1})
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
		t.Fatal(err)
	}
	idemBatch := build(t, idem(7, 0, now.UnixMilli()), 2)
	retry := append([]byte(nil), idemBatch...)
	if _, err := r.AppendLeader(idemBatch); err != nil {
		t.Fatal(err)
	}
	if hw := r.HighWatermark(); hw != 5 {
		t.Fatalf("hw %d before the crash, want 5", hw)
	}

	c, err := Open(Options{Dir: crashCopy(t, dir), Topic: "t", Config: r.Config(), LeaderEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.IsLeader() {
		t.Fatal("the reopened replica leads before the control plane said so")
	}
	if leo, hw := c.Log().LogEndOffset(), c.HighWatermark(); leo != 10 || hw != 5 {
		t.Fatalf("reopened: log end %d, high watermark %d; want 10 and 5", leo, hw)
	}
	if _, err := c.AppendLeader(build(t, batch.NoProducer(), 1)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append on the reopened follower: %v, want ErrNotLeader", err)
	}
	c.SetAssignment(1, []int32{1, 2}, []int32{1})
	c.SetLeadership(true, 2)
	if hw := c.HighWatermark(); hw != 5 {
		t.Fatalf("leading with ISR {1} below min.insync.replicas: hw %d, want 5", hw)
	}
	if rr, err := c.Read(5, 1<<20, true); err != nil || rr.Size != 0 {
		t.Fatalf("read at the high watermark: %d bytes, %v; want none", rr.Size, err)
	}
	res, err := c.AppendLeader(retry)
	if err != nil || !res.Duplicate || res.BaseOffset != 8 {
		t.Fatalf("retried idempotent batch: %+v %v; want the duplicate at 8", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.WaitCommitted(ctx, res.LastOffset, res.LeaderEpoch); err == nil {
		t.Fatal("the retried batch, never replicated, was acknowledged as committed")
	}
}

// TestHWCheckpointOnClose: Close checkpoints the high watermark, and a
// clean reopen starts from it.
func TestHWCheckpointOnClose(t *testing.T) {
	dir := t.TempDir()
	r := openTest(t, dir, nil, nil)
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 4)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, HWCheckpointFile))
	if err != nil || string(b) != "0\n1\nt 0 4\n" {
		t.Fatalf("checkpoint %q (%v)", b, err)
	}
	r = openFollower(t, dir, nil, nil)
	defer r.Close()
	if hw := r.HighWatermark(); hw != 4 {
		t.Fatalf("reopened hw %d, want 4", hw)
	}
}

// TestIdlePartitionWritesNoHWCheckpoint: a new partition whose high
// watermark is its log start writes no checkpoint, periodically or at
// Close (issue 23: 10,000 idle partitions cost 10,000 files, fsyncs and
// renames per node, each in the idle window), and reopens at the log
// start all the same; its first committed record is checkpointed. It
// failed before: the first MaybeFlush wrote "t 0 0".
func TestIdlePartitionWritesNoHWCheckpoint(t *testing.T) {
	dir := t.TempDir()
	r := openTest(t, dir, nil, nil)
	noFile := func(when string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(dir, HWCheckpointFile)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: checkpoint file present (%v)", when, err)
		}
	}
	if err := r.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	noFile("idle, after MaybeFlush")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	noFile("idle, after Close")
	r = openTest(t, dir, nil, nil)
	defer r.Close()
	if hw := r.HighWatermark(); hw != 0 {
		t.Fatalf("reopened hw %d, want 0", hw)
	}
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 2)); err != nil {
		t.Fatal(err)
	}
	if err := r.MaybeFlush(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, HWCheckpointFile)); err != nil || string(b) != "0\n1\nt 0 2\n" {
		t.Fatalf("after a committed record: checkpoint %q (%v)", b, err)
	}
}

// TestHWCheckpointClamped: a checkpoint past the log end (a crash lost the
// unflushed tail) opens at the log end and is rewritten at once; one
// below the log start opens at the log start; a missing or foreign one at
// the log start.
func TestHWCheckpointClamped(t *testing.T) {
	dir := t.TempDir()
	r := openTest(t, dir, nil, nil)
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 4)); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, HWCheckpointFile), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file   string
		hw     int64
		onDisk string
	}{
		{"0\n1\nt 0 9\n", 4, "0\n1\nt 0 4\n"},
		{"0\n1\nt 0 2\n", 2, "0\n1\nt 0 2\n"},
		{"0\n1\nother 0 3\n", 0, "0\n1\nother 0 3\n"},
		{"garbage", 0, "garbage"},
	} {
		write(tc.file)
		r := openFollower(t, dir, nil, nil)
		hw := r.HighWatermark()
		b, _ := os.ReadFile(filepath.Join(dir, HWCheckpointFile))
		r.SetLeadership(false, 0)
		if err := r.log.Close(); err != nil { // not r.Close: it would checkpoint
			t.Fatal(err)
		}
		if hw != tc.hw || string(b) != tc.onDisk {
			t.Fatalf("checkpoint %q: opened at %d with %q on disk; want %d, %q", tc.file, hw, b, tc.hw, tc.onDisk)
		}
	}
	if err := os.Remove(filepath.Join(dir, HWCheckpointFile)); err != nil {
		t.Fatal(err)
	}
	r = openFollower(t, dir, nil, nil)
	defer r.Close()
	if hw := r.HighWatermark(); hw != 0 {
		t.Fatalf("no checkpoint: opened at %d, want the log start 0", hw)
	}
}

// TestTruncationBelowCheckpointRewritesIt: a follower whose tail is cut
// below its checkpointed high watermark (an unclean election) rewrites the
// checkpoint at once, so that a crash after it appends uncommitted records
// at those offsets does not reopen with them counted as committed.
func TestTruncationBelowCheckpointRewritesIt(t *testing.T) {
	dir := t.TempDir()
	r := openTest(t, dir, nil, nil)
	defer r.Close()
	for range 2 {
		if _, err := r.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.CheckpointHW(); err != nil || r.CheckpointedHW() != 6 {
		t.Fatalf("checkpoint %d, %v", r.CheckpointedHW(), err)
	}
	r.SetLeadership(false, 1)
	if err := r.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if got := r.CheckpointedHW(); got != 3 {
		t.Fatalf("checkpoint %d after cutting at 3", got)
	}
	c, err := Open(Options{Dir: crashCopy(t, dir), Topic: "t", Config: r.Config()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if hw := c.HighWatermark(); hw > 3 {
		t.Fatalf("reopened after the cut with hw %d, past the cut at 3", hw)
	}
}
