package segment

import (
	"bytes"
	"errors"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// Crash tests on the crashable in-memory filesystem: unlike a SIGKILL,
// which keeps the page cache, a crash of vfs.MemFS drops every byte not
// fsynced and every directory entry whose directory was not fsynced.

const crashDir = "/data/t-0"

// beforeFsync makes fn run before each fsync of a file or directory the
// logs make, until the returned restore is called or the test ends.
func beforeFsync(t *testing.T, fn func(f vfs.File)) (restore func()) {
	saved := fsync
	restore = func() { fsync = saved }
	t.Cleanup(restore)
	fsync = func(f vfs.File) error {
		fn(f)
		return saved(f)
	}
	return restore
}

// newCrashFS returns a MemFS holding crashDir durably (as the broker's
// data directory would be before any log opens).
func newCrashFS(t *testing.T) *vfs.MemFS {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll(crashDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/", "/data", crashDir} {
		if err := vfs.SyncDir(fs, d); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

func crashConfig(fs vfs.FS) Config {
	cfg := testConfig(newFakeClock())
	cfg.FS = fs
	cfg.FileDeleteDelay = 0
	return cfg
}

// crashImage is the filesystem a crash would have left at one moment, with
// what the log had promised was durable by then.
type crashImage struct {
	fs      *vfs.MemFS
	durable int64 // the LEO at the last Flush that had returned
	at      string
}

// batchesByOffset adds a log's batches to into, by base offset (a
// truncated log may have held another batch at an offset before).
func batchesByOffset(t *testing.T, b []byte, into map[int64][][]byte) {
	t.Helper()
	for _, rb := range decodeBatches(t, b) {
		n := int(rb.Length) + batch.LogOverhead
		if !slices.ContainsFunc(into[rb.FirstOffset], func(x []byte) bool { return bytes.Equal(x, b[:n]) }) {
			into[rb.FirstOffset] = append(into[rb.FirstOffset], b[:n])
		}
		b = b[n:]
	}
}

// checkRecovery opens the log of a crash image and checks that it holds
// every offset promised durable (by a returned Flush, and by the recovery
// point file in the image), and nothing but whole batches that were
// appended at their offsets (want: every batch appended, by base offset).
func checkRecovery(t *testing.T, img crashImage, want map[int64][][]byte) *Log {
	t.Helper()
	rp, _ := readOffsetFile(img.fs, crashDir, recoveryPointFile)
	l, err := Open(crashDir, crashConfig(img.fs))
	if err != nil {
		t.Fatalf("%s: open after crash: %v", img.at, err)
	}
	leo := l.LogEndOffset()
	if leo < img.durable || leo < rp {
		t.Fatalf("%s: recovered LEO %d; flushed up to %d, recovery point file says %d", img.at, leo, img.durable, rp)
	}
	data := readAll(t, l, l.LogStartOffset())
	got := map[int64][][]byte{}
	batchesByOffset(t, data, got)
	for off, bs := range got {
		if !slices.ContainsFunc(want[off], func(x []byte) bool { return bytes.Equal(x, bs[0]) }) {
			t.Fatalf("%s: recovered a batch at offset %d that was not appended there", img.at, off)
		}
	}
	checkEpochsCoverBatches(t, img.at, l.Epochs(), decodeBatches(t, data))
	return l
}

// checkEpochsCoverBatches fails unless every batch's leader epoch is the
// one the history puts in force at its base offset: what followers
// (OffsetForLeaderEpoch) and a new leader's truncation read from it.
// Batches below the history's first entry are not checked: retention cuts
// the history at the new log start before it writes that start, so a
// crash between the two leaves batches below the history that the next
// retention removes.
func checkEpochsCoverBatches(t *testing.T, at string, epochs []EpochEntry, batches []kmsg.RecordBatch) {
	t.Helper()
	for _, b := range batches {
		if len(epochs) > 0 && b.FirstOffset < epochs[0].StartOffset {
			continue
		}
		in := int32(-1)
		for _, e := range epochs {
			if e.StartOffset <= b.FirstOffset {
				in = e.Epoch
			}
		}
		if in != b.PartitionLeaderEpoch {
			t.Fatalf("%s: batch at %d has leader epoch %d, the recovered history %v puts %d there", at, b.FirstOffset, b.PartitionLeaderEpoch, epochs, in)
		}
	}
}

// crashTruncateBy is how many offsets crashScript's truncation cuts.
const crashTruncateBy = 6

// crashScript appends, flushes and rolls a log on fs the same way each
// time, calling step after each operation.
func crashScript(t *testing.T, l *Log, step func(what string)) {
	t.Helper()
	b := buildBatch(t, batchSpec{records: 3, valueSize: 100})
	b2 := buildBatch(t, batchSpec{records: 3, valueSize: 50})
	for round := range 4 {
		mustAppend(t, l, b, int32(round))
		step("append")
		mustAppend(t, l, b, int32(round))
		step("append")
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		step("flush")
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		step("roll")
		if round%2 == 1 {
			// A roll straight after a flush: only the directory holds news.
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			step("flush after roll")
		}
		mustAppend(t, l, b, int32(round))
		step("append after roll")
		if round == 2 {
			step("before retention")
			if _, err := l.DeleteSegmentsBefore(l.Segments()[1].BaseOffset); err != nil {
				t.Fatal(err)
			}
			step("retention")
		}
		if round == 3 {
			step("before truncate")
			// A follower's truncation of its unflushed and flushed tail,
			// then new batches of another epoch at the same offsets.
			if err := l.Truncate(l.LogEndOffset() - crashTruncateBy); err != nil {
				t.Fatal(err)
			}
			step("truncate")
			mustAppend(t, l, b2, int32(round+1))
			step("append after truncate")
			mustAppend(t, l, b2, int32(round+1))
			step("append after truncate")
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	step("last flush")
}

// TestCrashAtEverySync crashes the filesystem just before each fsync the
// log makes (of a file or a directory, in the writer or the background
// flusher) and after each operation of a script of appends, flushes,
// rolls, retention and a follower's truncation, then recovers each image: every offset a returned
// Flush or the image's recovery point promised is there, and the log holds
// only whole batches that were appended.
func TestCrashAtEverySync(t *testing.T) {
	fs := newCrashFS(t)
	var (
		mu      sync.Mutex
		images  []crashImage
		durable int64
		phase   = "open"
	)
	snap := func(at string) {
		mu.Lock()
		defer mu.Unlock()
		if len(images) < 2000 {
			images = append(images, crashImage{fs: fs.CrashClone(), durable: durable, at: at})
		}
	}
	restoreFsync := beforeFsync(t, func(f vfs.File) {
		mu.Lock()
		at := "before fsync of " + path.Base(f.Name()) + " in " + phase
		mu.Unlock()
		snap(at)
	})
	l := openLog(t, crashDir, crashConfig(fs))
	want := map[int64][][]byte{}
	crashScript(t, l, func(what string) {
		switch what {
		case "before retention", "before truncate":
			batchesByOffset(t, readAll(t, l, l.LogStartOffset()), want)
		}
		mu.Lock()
		if what == "before truncate" {
			// A crash in the middle of the truncation may have cut.
			durable = min(durable, l.LogEndOffset()-crashTruncateBy)
		}
		switch what {
		case "flush", "flush after roll", "last flush":
			durable = l.LogEndOffset()
		case "truncate":
			// Truncation takes back what it cuts, flushed or not.
			durable = min(durable, l.LogEndOffset())
		}
		phase = what
		mu.Unlock()
		snap("after " + what)
	})
	batchesByOffset(t, readAll(t, l, l.LogStartOffset()), want)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	restoreFsync()
	if len(images) < 20 {
		t.Fatalf("only %d crash images", len(images))
	}
	for _, img := range images {
		r := checkRecovery(t, img, want)
		r.Close()
	}
	t.Logf("%d crash images recovered", len(images))
}

// TestCrashAfterFlushKeepsTheLog crashes right after each Flush returns
// and after Close: the recovered log has the same segments, log end and
// bytes as the live one. A roll's new segment file exists only through a
// directory fsync (the recovery-point file's own rename syncs the
// directory too, but not when a flush has no new offset to record), so
// this fails if the roll path's directory fsync (syncPendingDir) is lost.
func TestCrashAfterFlushKeepsTheLog(t *testing.T) {
	fs := newCrashFS(t)
	l := openLog(t, crashDir, crashConfig(fs))
	check := func(what string) {
		img := fs.CrashClone()
		r, err := Open(crashDir, crashConfig(img))
		if err != nil {
			t.Fatalf("after %s: open after crash: %v", what, err)
		}
		defer r.Close()
		live, got := l.Segments(), r.Segments()
		if len(live) != len(got) {
			t.Fatalf("after %s: %d segments recovered, %d live", what, len(got), len(live))
		}
		for i := range live {
			if live[i].BaseOffset != got[i].BaseOffset || live[i].NextOffset != got[i].NextOffset {
				t.Fatalf("after %s: segment %d recovered as [%d, %d), live [%d, %d)", what, i,
					got[i].BaseOffset, got[i].NextOffset, live[i].BaseOffset, live[i].NextOffset)
			}
		}
		from := l.LogStartOffset()
		if r.LogStartOffset() != from || r.LogEndOffset() != l.LogEndOffset() {
			t.Fatalf("after %s: recovered [%d, %d), live [%d, %d)", what, r.LogStartOffset(), r.LogEndOffset(), from, l.LogEndOffset())
		}
		if !bytes.Equal(readAll(t, r, from), readAll(t, l, from)) {
			t.Fatalf("after %s: recovered bytes differ", what)
		}
	}
	crashScript(t, l, func(what string) {
		if what == "flush" || what == "flush after roll" || what == "last flush" {
			check(what)
		}
	})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	img := fs.CrashClone()
	r, err := Open(crashDir, crashConfig(img))
	if err != nil {
		t.Fatal(err)
	}
	if r.scanCount() != 0 {
		t.Errorf("a crash after Close re-read %d segments: the clean-shutdown marker was not durable", r.scanCount())
	}
	r.Close()
}

// errDirSync is the error of rolledLogFailingDirSync's directory fsyncs.
var errDirSync = errors.New("injected EIO")

// rolledLogFailingDirSync opens a log on a crashable FS behind an
// error-injecting one, appends batch b, flushes, rolls and appends b
// again. Once failing is set, every fsync of the log's directory fails
// with errDirSync. The caller closes the log.
func rolledLogFailingDirSync(t *testing.T) (l *Log, b []byte, failing *atomic.Bool) {
	t.Helper()
	failing = new(atomic.Bool)
	fs := vfs.WithErrors(newCrashFS(t), func(op vfs.Op) error {
		if failing.Load() && op.Kind == vfs.OpSync && op.Path == crashDir {
			return errDirSync
		}
		return nil
	})
	l = openLog(t, crashDir, crashConfig(fs))
	b = buildBatch(t, batchSpec{records: 2})
	mustAppend(t, l, b, 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, b, 0)
	return l, b, failing
}

// TestErrorFSFailedSyncStopsAppends: a directory fsync that fails (on the
// error-injecting FS) makes Flush fail with ErrSyncFailed, and the log
// takes no more appends.
func TestErrorFSFailedSyncStopsAppends(t *testing.T) {
	l, b, failing := rolledLogFailingDirSync(t)
	defer l.Close()
	failing.Store(true)
	if err := l.Flush(); !errors.Is(err, ErrSyncFailed) || !errors.Is(err, errDirSync) {
		t.Fatalf("Flush with a failing directory fsync: %v", err)
	}
	if _, err := l.Append(b, 0); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Append after a failed fsync: %v", err)
	}
}

// TestNewLogOpensWithoutFsync: opening a new, empty log fsyncs nothing
// (a topic of 10,000 partitions made 30,000 fsyncs of empty files on each
// node before), and its first flush makes the appended batch and the
// segment's directory entry durable: a crash after it recovers the batch.
func TestNewLogOpensWithoutFsync(t *testing.T) {
	fs := newCrashFS(t)
	var syncs []string
	beforeFsync(t, func(f vfs.File) { syncs = append(syncs, path.Base(f.Name())) })
	l := openLog(t, crashDir, crashConfig(fs))
	if len(syncs) != 0 {
		t.Fatalf("opening a new log fsynced %v", syncs)
	}
	mustAppend(t, l, buildBatch(t, batchSpec{records: 3, valueSize: 100}), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(syncs) == 0 {
		t.Fatal("the first flush with data fsynced nothing")
	}
	r, err := Open(crashDir, crashConfig(fs.CrashClone()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.LogEndOffset() != l.LogEndOffset() {
		t.Fatalf("after a crash following the first flush: log end %d, want %d", r.LogEndOffset(), l.LogEndOffset())
	}
}

// TestErrorFSFailedRecoveryPointSyncStopsAppends: when the background
// flusher has already synced a rolled segment and the directory, a flush's
// only directory fsync is the recovery point's; its failure is an fsync
// failure like any other (ErrSyncFailed, sticky, appends refused). Before,
// it came back bare and the log went on taking appends: the race behind a
// failure of TestErrorFSFailedSyncStopsAppends in a clean-clone make test.
func TestErrorFSFailedRecoveryPointSyncStopsAppends(t *testing.T) {
	l, b, failing := rolledLogFailingDirSync(t)
	defer l.Close()
	if err := proctest.WaitFor(10*time.Second, func() bool {
		l.bg.mu.Lock()
		defer l.bg.mu.Unlock()
		return len(l.bg.pending) == 0 && !l.bg.dirDirty.Load()
	}); err != nil {
		t.Fatal("the background flusher did not sync the rolled segment")
	}
	failing.Store(true)
	if err := l.Flush(); !errors.Is(err, ErrSyncFailed) || !errors.Is(err, errDirSync) {
		t.Fatalf("Flush with a failing recovery-point directory fsync: %v", err)
	}
	if _, err := l.Append(b, 0); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("Append after a failed fsync: %v", err)
	}
}

// TestCrashAfterRolledEpochKeepsItsHistory: a new leader epoch's first
// batches, then a roll whose background flush raises the recovery point
// past them, then a crash. The recovered history must hold the epoch, read
// from the checkpoint: the open must read no more than the same log's open
// with no new epoch (a recovery point passes an epoch's start only once the
// checkpoint holding it is durable; a checkpoint lost in the crash made
// the open rebuild the history from every batch).
func TestCrashAfterRolledEpochKeepsItsHistory(t *testing.T) {
	run := func(epoch int32) ([]EpochEntry, int64) {
		fs := newCrashFS(t)
		l := openLog(t, crashDir, crashConfig(fs))
		defer l.Close()
		b := buildBatch(t, batchSpec{records: 3, valueSize: 100})
		for range 3 {
			mustAppend(t, l, b, 0)
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, b, epoch) // a new epoch's first batch
		mustAppend(t, l, b, epoch)
		end := l.LogEndOffset()
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if err := proctest.WaitFor(5*time.Second, func() bool { return l.RecoveryPoint() == end }); err != nil {
			t.Fatalf("the background flusher did not raise the recovery point to %d: %d", end, l.RecoveryPoint())
		}
		before := Recovery()
		r, err := Open(crashDir, crashConfig(fs.CrashClone()))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return r.Epochs(), Recovery().Bytes - before.Bytes
	}
	_, same := run(0)
	got, read := run(1)
	want := []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 9}}
	if !slices.Equal(got, want) {
		t.Fatalf("recovered history %v, want %v", got, want)
	}
	if read != same {
		t.Fatalf("the open read %d bytes; with no new epoch, %d", read, same)
	}
}

// TestCrashTwiceKeepsARecoveredEpoch: a new epoch's batches, a roll, and a
// crash once the flusher has synced the rolled segment but before it moved
// the recovery point: the open re-reads the batches and assigns the epoch
// again. A second crash after a flush has moved the recovery point past
// them must still find the epoch: the open writes what recovery assigned
// to the checkpoint before any flush passes those batches.
func TestCrashTwiceKeepsARecoveredEpoch(t *testing.T) {
	fs := newCrashFS(t)
	l := openLog(t, crashDir, crashConfig(fs))
	defer l.Close()
	b := buildBatch(t, batchSpec{records: 3, valueSize: 100})
	mustAppend(t, l, b, 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, b, 1)
	end := l.LogEndOffset()
	var (
		mu      sync.Mutex
		img     *vfs.MemFS
		segSync bool
	)
	restoreFsync := beforeFsync(t, func(f vfs.File) {
		mu.Lock()
		if path.Ext(f.Name()) == logSuffix {
			segSync = true
		} else if segSync && img == nil {
			img = fs.CrashClone() // the rolled segment is durable, nothing after it
		}
		mu.Unlock()
	})
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := proctest.WaitFor(5*time.Second, func() bool { return l.RecoveryPoint() == end }); err != nil {
		t.Fatalf("the background flusher did not raise the recovery point to %d: %d", end, l.RecoveryPoint())
	}
	restoreFsync()
	mu.Lock()
	defer mu.Unlock()
	if img == nil {
		t.Fatal("no fsync followed the rolled segment's")
	}
	want := []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 3}}
	r, err := Open(crashDir, crashConfig(img))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("after the first crash: history %v, want %v", got, want)
	}
	// More of the epoch, then a flush: the recovered batches now lie in a
	// sealed segment below the recovery point, which a second open
	// does not re-read.
	mustAppend(t, r, b, 1)
	if err := r.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	again := img.CrashClone()
	r.Close()
	r2, err := Open(crashDir, crashConfig(again))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if got := r2.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("after the second crash: history %v, want %v", got, want)
	}
}
