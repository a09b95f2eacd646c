package partition

import (
	"bytes"
	"errors"
	"io/fs"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// Crash tests of the partition's own files (the high watermark checkpoint,
// producer-state snapshots) on the crashable in-memory filesystem, which
// drops every byte not fsynced and every directory entry whose directory
// was not fsynced (a SIGKILL keeps the page cache and proves neither).

const (
	crashLogDir = "/data/logs"
	crashDir    = crashLogDir + "/t-0"
)

// newPartitionCrashFS returns a MemFS holding crashDir durably, as the
// replica manager leaves a new partition's directory before Open.
func newPartitionCrashFS(t *testing.T) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	if err := mem.MkdirAll(crashDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/", "/data", crashLogDir, crashDir} {
		if err := vfs.SyncDir(mem, d); err != nil {
			t.Fatal(err)
		}
	}
	return mem
}

// crashCkpt says where the high watermark checkpoint lives: the log dir's
// shared file (as the broker runs) or the replica's private one.
type crashCkpt struct {
	name   string
	shared bool
}

func (c crashCkpt) path() string {
	if c.shared {
		return path.Join(crashLogDir, HWCheckpointFile)
	}
	return path.Join(crashDir, HWCheckpointFile)
}

// open opens the replica of crashDir on fsys as Open leaves it (a
// follower at epoch 0); ck is the shared checkpoint it registers with,
// nil for a private one.
func (c crashCkpt) open(t *testing.T, fsys vfs.FS) (*Replica, *HWCheckpoints, error) {
	t.Helper()
	var ck *HWCheckpoints
	if c.shared {
		ck = OpenHWCheckpoints(crashLogDir, HWCheckpointOptions{FS: fsys})
	}
	r, err := Open(Options{Dir: crashDir, Topic: "t", Partition: 0, Config: config.ResolveTopic(smallIndexes, nil),
		HWCheckpoints: ck, TopicID: [16]byte{7}, FS: fsys})
	return r, ck, err
}

// checkpointValue is the replica's entry in the checkpoint file at p on
// fsys: -1 when there is no file or no entry, -2 when the file does not
// decode (a torn write).
func checkpointValue(fsys vfs.FS, p string) int64 {
	b, err := fsys.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return -1
	}
	if err != nil {
		return -2
	}
	entries, err := decodeHWCheckpoint(b)
	if err != nil {
		return -2
	}
	e, ok := entries[hwKey{"t", 0}]
	if !ok {
		return -1
	}
	return e.hw
}

// partitionCrashImage is what a crash would have left at one moment, with
// what the replica had promised by then.
type partitionCrashImage struct {
	fs *vfs.MemFS
	at string
	// ckpt are the checkpoint values the file may hold: the one the last
	// returned write left, and those of a write in progress.
	ckpt []int64
	// durable is the log end at the last returned Flush (a truncation
	// lowers it).
	durable int64
	// closed: the replica had closed, so its snapshot at the log end was
	// written.
	closed bool
	// horizon is the number of script steps whose commitments the image
	// may show: those completed, and the one in progress.
	horizon int
}

// commit is a batch that was below the high watermark at its offset, from
// the step'th script step on.
type commit struct {
	batch []byte
	step  int
}

// batchesBelow returns the batches of l from its log start below end, by
// base offset.
func batchesBelow(t *testing.T, l *segment.Log, end int64) map[int64][]byte {
	t.Helper()
	out := map[int64][]byte{}
	for off := l.LogStartOffset(); off < end; {
		b, err := l.ReadBytes(off, 1<<20, end, true)
		if err != nil {
			t.Fatal(err)
		}
		next := off
		if err := batch.Split(b, func(h *batch.Header, raw []byte) error {
			out[h.BaseOffset] = bytes.Clone(raw)
			next = h.NextOffset()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if next <= off {
			break
		}
		off = next
	}
	return out
}

// crashCutBy is how many offsets partitionCrashScript's truncation cuts:
// two batches.
const crashCutBy = 6

// partitionCrashScript opens a replica (open) and runs a leader's
// idempotent appends with rolls, flushes and checkpoints; closes it (which
// writes a snapshot at the log end) and opens it again (a restart); then,
// as a follower of a new epoch, a truncation below the checkpointed high
// watermark and another leader's batches at the cut offsets (not committed
// until a later fetch says so); then Close. step is called after each
// operation with the replica it ran on.
func partitionCrashScript(t *testing.T, open func() (*Replica, *HWCheckpoints), step func(what string, r *Replica)) {
	t.Helper()
	r, ck := open()
	closeReplica := func() {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if ck != nil {
			// The owner writes the closed replica's last value.
			if err := ck.WriteNow(); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkpoint := func() {
		var err error
		if ck != nil {
			err = ck.WriteNow()
		} else {
			err = r.CheckpointHW()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r.SetLeadership(true, 0)
	seq := int32(0)
	ts := time.Now().UnixMilli() // within segment.ms: the log rolls only where the script says
	for round := range 3 {
		for i := range 2 {
			if _, err := r.AppendLeader(build(t, idem(7, seq, ts), 3)); err != nil {
				t.Fatal(err)
			}
			seq += 3
			step("append", r)
			if round == 2 && i == 0 {
				// A roll, with its snapshot, inside what the truncation
				// will cut: that snapshot is of batches another leader
				// replaces.
				if err := r.Log().Roll(); err != nil {
					t.Fatal(err)
				}
				step("roll", r)
			}
		}
		checkpoint()
		step("checkpoint", r)
		if err := r.Log().Flush(); err != nil {
			t.Fatal(err)
		}
		step("flush", r)
		if round < 2 {
			// The roll writes its producer snapshot without an fsync.
			if err := r.Log().Roll(); err != nil {
				t.Fatal(err)
			}
			step("roll", r)
		}
	}
	// A restart: Close writes a snapshot at the log end, with fsyncs.
	closeReplica()
	step("close", r)
	r, ck = open()
	step("reopen", r)
	hw := r.HighWatermark()
	if r.CheckpointedHW() != hw {
		t.Fatalf("checkpointed %d, high watermark %d", r.CheckpointedHW(), hw)
	}
	cut := hw - crashCutBy // below the checkpointed high watermark

	// Another leader of epoch 1 wrote other batches from the cut on.
	other := newPartitionCrashFS(t)
	src, _, err := crashCkpt{}.open(t, other)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for src.Log().LogEndOffset() < cut {
		prefix, err := r.Log().ReadBytes(src.Log().LogEndOffset(), 1<<20, cut, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := src.AppendFollower(prefix, cut); err != nil {
			t.Fatal(err)
		}
	}
	src.SetLeadership(true, 1)
	for i := range 2 {
		if _, err := src.AppendLeader(build(t, idem(8, int32(3*i), ts), 3)); err != nil {
			t.Fatal(err)
		}
	}
	theirs, err := src.Log().ReadBytes(cut, 1<<20, src.Log().LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}

	r.SetLeadership(false, 1)
	step("follower", r)
	if err := r.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	step("truncate", r)
	for len(theirs) > 0 {
		if err := r.AppendFollower(theirs, cut); err != nil {
			t.Fatal(err)
		}
		if theirs, err = src.Log().ReadBytes(r.Log().LogEndOffset(), 1<<20, src.Log().LogEndOffset(), true); err != nil {
			t.Fatal(err)
		}
	}
	if r.HighWatermark() != cut {
		t.Fatalf("high watermark %d after the follower's append, want %d (the leader's)", r.HighWatermark(), cut)
	}
	step("append above the high watermark", r)
	// A roll hands the segment holding them to the log's background
	// flusher, which fsyncs it, then the directory, then raises the
	// recovery point.
	end := r.Log().LogEndOffset()
	if err := r.Log().Roll(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000 && r.Log().RecoveryPoint() < end; i++ {
		time.Sleep(time.Millisecond)
	}
	if rp := r.Log().RecoveryPoint(); rp < end {
		t.Fatalf("the background flusher did not raise the recovery point to %d in 10 s: %d", end, rp)
	}
	step("roll", r)
	if err := r.Log().Flush(); err != nil {
		t.Fatal(err)
	}
	step("flush", r)
	// The leader's high watermark reaches them: now they are committed.
	if err := r.AppendFollower(nil, r.Log().LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	step("high watermark", r)
	checkpoint()
	step("checkpoint", r)
	closeReplica()
	step("close", r)
}

// TestPartitionCrashAtEverySync crashes the filesystem just before each
// fsync (of a file or a directory: the log's and the partition's own) and
// after each operation of partitionCrashScript, then opens the replica of
// each image and checks what recovery must guarantee:
//
//   - the checkpoint file holds the value the last returned checkpoint
//     write left, or one of the write in progress (never an older one: a
//     truncation's lowered value, once TruncateTo returned, survives);
//   - every batch below the reopened high watermark was committed at its
//     offset (a high watermark that survived a truncation would expose the
//     other leader's uncommitted batches);
//   - the log holds every offset a returned Flush made durable;
//   - the producer state is the one a replay of the whole recovered log
//     gives, whatever snapshots the crash left (a snapshot of the cut
//     batches, written at the restart's Close, must not come back beside
//     the other leader's batches that the background flusher fsynced);
//   - after Close, the snapshot at the log end is durable (recovery replays
//     nothing).
func TestPartitionCrashAtEverySync(t *testing.T) {
	for _, c := range []crashCkpt{{"shared checkpoint", true}, {"private checkpoint", false}} {
		t.Run(c.name, func(t *testing.T) { testPartitionCrashAtEverySync(t, c) })
	}
}

func testPartitionCrashAtEverySync(t *testing.T, c crashCkpt) {
	mem := newPartitionCrashFS(t)
	var (
		mu       sync.Mutex
		images   []partitionCrashImage
		stable   = int64(-1) // the checkpoint value the last returned write left
		durable  int64
		closed   bool
		phase    = "open"
		ckptPath = c.path()
		steps    int // script steps completed
	)
	// snap records a crash image; REQUIRES: mu held.
	snap := func(at string, horizon int) {
		if len(images) >= 1000 {
			return
		}
		// A write in progress has its new value in the temporary file,
		// or already renamed over the target in the running system.
		allowed := []int64{stable, checkpointValue(mem, ckptPath)}
		if _, err := mem.Stat(ckptPath + ".tmp"); err == nil {
			allowed = append(allowed, checkpointValue(mem, ckptPath+".tmp"))
		}
		images = append(images, partitionCrashImage{fs: mem.CrashClone(), at: at, ckpt: allowed, durable: durable, closed: closed, horizon: horizon})
	}
	fsys := vfs.WithErrors(mem, func(op vfs.Op) error {
		if op.Kind == vfs.OpSync {
			mu.Lock()
			snap("before fsync of "+op.Path+" in "+phase, steps+1)
			mu.Unlock()
		}
		return nil
	})
	open := func() (*Replica, *HWCheckpoints) {
		r, ck, err := c.open(t, fsys)
		if err != nil {
			t.Fatal(err)
		}
		return r, ck
	}
	committed := map[int64][]commit{} // batches below the high watermark, by base offset
	partitionCrashScript(t, open, func(what string, r *Replica) {
		mu.Lock()
		defer mu.Unlock()
		steps++
		if what != "close" {
			for off, b := range batchesBelow(t, r.Log(), r.HighWatermark()) {
				if !slices.ContainsFunc(committed[off], func(c commit) bool { return bytes.Equal(c.batch, b) }) {
					committed[off] = append(committed[off], commit{b, steps})
				}
			}
		}
		switch what {
		case "flush":
			durable = r.Log().LogEndOffset()
		case "follower":
			// A crash in the middle of the truncation may have cut.
			durable = min(durable, r.Log().LogEndOffset()-crashCutBy)
		case "truncate":
			durable = min(durable, r.Log().LogEndOffset())
		case "close":
			closed = true
		case "reopen":
			closed = false
		}
		stable = checkpointValue(mem, ckptPath)
		phase = what
		snap("after "+what, steps)
	})
	if len(images) < 20 {
		t.Fatalf("only %d crash images", len(images))
	}
	for _, img := range images {
		checkPartitionRecovery(t, c, img, committed)
	}
	t.Logf("%d crash images recovered", len(images))
}

// checkPartitionRecovery opens the replica of a crash image and checks it
// against what had been promised (TestPartitionCrashAtEverySync).
func checkPartitionRecovery(t *testing.T, c crashCkpt, img partitionCrashImage, committed map[int64][]commit) {
	t.Helper()
	if v := checkpointValue(img.fs, c.path()); !slices.Contains(img.ckpt, v) {
		t.Fatalf("%s: the checkpoint holds %d; the last returned write left %d, one in progress %v", img.at, v, img.ckpt[0], img.ckpt[1:])
	}
	snapshots := listSnapshots(img.fs, crashDir)
	r, _, err := c.open(t, img.fs)
	if err != nil {
		t.Fatalf("%s: open after crash: %v", img.at, err)
	}
	defer r.Close()
	l := r.Log()
	if l.LogEndOffset() < img.durable {
		t.Fatalf("%s: recovered log end %d; flushed up to %d", img.at, l.LogEndOffset(), img.durable)
	}
	hw := r.HighWatermark()
	for off, b := range batchesBelow(t, l, hw) {
		if !slices.ContainsFunc(committed[off], func(c commit) bool { return c.step <= img.horizon && bytes.Equal(c.batch, b) }) {
			t.Fatalf("%s: the reopened high watermark %d exposes a batch at %d that was not committed there", img.at, hw, off)
		}
	}
	if l.LogStartOffset() != 0 {
		t.Fatalf("%s: log start %d", img.at, l.LogStartOffset())
	}
	replayed := NewProducerState()
	r.appendMu.Lock()
	if err := r.replayProducers(replayed, 0); err != nil {
		r.appendMu.Unlock()
		t.Fatal(err)
	}
	got := r.producers.Encode()
	r.appendMu.Unlock()
	if !bytes.Equal(got, replayed.Encode()) {
		t.Fatalf("%s: producer state from the snapshots %v differs from a replay of the log", img.at, snapshots)
	}
	if img.closed {
		_, at, err := LoadLatestSnapshot(img.fs, crashDir, l.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		if at != l.LogEndOffset() {
			t.Fatalf("%s: after Close the newest snapshot is at %d, the log ends at %d", img.at, at, l.LogEndOffset())
		}
	}
}

// TestPartitionCrashAfterTruncateCheckpoint names the case the script
// exists for: right after TruncateTo returns, a crash reopens with the
// lowered high watermark, even once the other leader's batches at the cut
// offsets are flushed.
func TestPartitionCrashAfterTruncateCheckpoint(t *testing.T) {
	for _, c := range []crashCkpt{{"shared checkpoint", true}, {"private checkpoint", false}} {
		t.Run(c.name, func(t *testing.T) {
			mem := newPartitionCrashFS(t)
			open := func() (*Replica, *HWCheckpoints) {
				r, ck, err := c.open(t, mem)
				if err != nil {
					t.Fatal(err)
				}
				return r, ck
			}
			var cut int64 = -1
			partitionCrashScript(t, open, func(what string, r *Replica) {
				switch what {
				case "truncate":
					cut = r.HighWatermark()
				case "flush":
					if cut < 0 {
						return
					}
					rr, _, err := c.open(t, mem.CrashClone())
					if err != nil {
						t.Fatal(err)
					}
					defer rr.Close()
					if hw := rr.HighWatermark(); hw != cut {
						t.Fatalf("reopened after the truncation to %d and a flush of the other leader's batches: high watermark %d (log end %d)",
							cut, hw, rr.Log().LogEndOffset())
					}
				}
			})
			if cut < 0 {
				t.Fatal("the script never truncated")
			}
		})
	}
}
