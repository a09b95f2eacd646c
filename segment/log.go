package segment

import (
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-io/shale/segment/vfs"
)

// Log is one partition's log on local disk.
//
// Concurrency: one appender and many readers, and one background goroutine
// that fsyncs rolled segments (flusher.go). Every mutation (Append,
// AppendAsFollower, Roll, Truncate, DeleteSegmentsBefore, Flush, MaybeFlush,
// Close) takes the writer lock, which it holds across its disk I/O, so
// mutations are serialized. State that readers see lives in mu and changes
// only while both the writer lock and mu are held; readers (Read,
// OffsetForTimestamp, Epochs, Segments, ...) take mu for reading, so they
// never wait for an fsync and never see a half-applied append.
//
// Locks, in the order they are taken (a goroutine holding one takes only
// those below it):
//
//	writer      a mutation, held across its disk I/O; the flusher only tries it
//	            (TryLock, to write the leader-epoch checkpoint: savedEpochsBelow)
//	bg.syncing  the flusher's current job (fsync or writeback), and dropFlushes under writer
//	mu, bg.mu, rp  leaves: each held briefly, and no lock is taken while holding one
//	               (mu: readers' state; bg.mu: the flusher's queue and sticky error;
//	               rp: the recovery point, held across its file write)
//
// The owner (partition.Replica) calls the Log under its own locks; the Log
// calls back into it only through Config.OnRoll, under writer.
type Log struct {
	dir    string
	fs     vfs.FS // cfg.FS
	cfg    Config
	logger *slog.Logger

	// writer serializes mutations; w is the state only mutations touch.
	writer sync.Mutex
	w      struct {
		unflushed      int64     // records appended since the last flush
		lastFlush      time.Time // clock time of the last flush
		pendingDeletes []pendingDelete
		scans          int // segments recovered by a full batch scan (tests)
		// wbSeg and wbFrom: the segment and position up to which writeback
		// was last requested (writeback.go); writebacks counts requests (tests).
		wbSeg      *segment
		wbFrom     int64
		writebacks int
	}

	// rp is the recovery point: offsets below it are fsynced, and the
	// recovery-point file says so. The writer and the background flusher
	// both move it, each holding this mutex across the file write.
	rp struct {
		sync.Mutex
		point int64
	}
	bg flusher

	// epochsUnsaved is 1 + the start offset of the first leader-epoch
	// history entry that the checkpoint file does not hold yet (an epoch's
	// first batch, AssignEpoch: installEpochsDeferred), or 0 when the file
	// holds the history. Written under the writer lock; the flusher reads
	// it to keep the recovery point below an epoch the file lacks.
	epochsUnsaved atomic.Int64

	// flushIdle: MaybeFlush has nothing to do until a segment is scheduled
	// for deletion or the settings change (no flush.ms, no deleted segment
	// waiting for file.delete.delay). Set by MaybeFlush under the writer
	// lock; cleared, under it, by scheduleDelete, SetConfig and Close.
	// flushCounted (writer lock): the log is open and counted in busyLogs
	// while flushIdle is false.
	flushIdle    atomic.Bool
	flushCounted bool

	// stateGen changes whenever l.mu is write-locked (lockState), before
	// the change it guards is visible: a reader that finds it where it was
	// may keep what it read under l.mu (the log end, log start, epochs).
	stateGen atomic.Uint64

	mu struct {
		sync.RWMutex
		segments []*segment // sorted by base offset; the last is active
		logStart int64
		leo      int64
		epochs   epochCache
		closed   bool
	}
}

// pendingDelete is a segment renamed .deleted, to be closed and removed at due.
type pendingDelete struct {
	seg *segment
	due time.Time
}

// active returns the active segment.
// REQUIRES: l.mu held (read) or the writer lock.
func (l *Log) active() *segment { return l.mu.segments[len(l.mu.segments)-1] }

// segmentFor returns the index of the segment whose base is the largest <=
// offset, or -1.
// REQUIRES: l.mu held (read) or the writer lock.
func (l *Log) segmentFor(offset int64) int {
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset })
	return i - 1
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset is the first offset the log serves.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.logStart
}

// LogEndOffset is the offset the next appended record will get (LEO).
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.leo
}

// RecoveryPoint is the offset below which everything is fsynced.
// It trails the log end offset: a roll hands the old segment to the
// background flusher, which raises it once that segment is fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.rp.Lock()
	defer l.rp.Unlock()
	return l.rp.point
}

// Size is the total size in bytes of the segments' .log files.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segments {
		n += s.size
	}
	return n
}

// SegmentInfo describes one segment for retention and tiering.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64     // offset after the segment's last batch
	Size         int64     // bytes in .log
	MaxTimestamp int64     // largest batch max timestamp; -1 when empty
	LastModified time.Time // the .log file's; set by SegmentsModified only
	Active       bool
}

// Segments lists the segments in offset order, from memory (LastModified
// is zero: the tiering and retention passes read every partition's
// segments each pass, and a stat of every file was most of an idle pass at
// 10,000 partitions). The caller owns the slice.
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.segmentsLocked()
}

func (l *Log) segmentsLocked() []SegmentInfo {
	out := make([]SegmentInfo, len(l.mu.segments))
	for i, s := range l.mu.segments {
		out[i] = SegmentInfo{BaseOffset: s.base, NextOffset: s.next, Size: s.size,
			MaxTimestamp: s.maxTs, Active: i == len(l.mu.segments)-1}
	}
	return out
}

// SegmentsModified is Segments with each segment's LastModified, its .log
// file's modification time (a stat of each file): what ListOffsets v0's
// offsets by time are made of, as Kafka's segment lastModified.
func (l *Log) SegmentsModified() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := l.segmentsLocked()
	for i, s := range l.mu.segments {
		if st, err := s.log.Stat(); err == nil {
			out[i].LastModified = st.ModTime()
		}
	}
	return out
}

// SegmentCount is how many segments the log has (at least 1, the active
// one).
func (l *Log) SegmentCount() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.mu.segments)
}

// Epochs returns the leader-epoch history. The caller owns the slice.
func (l *Log) Epochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]EpochEntry(nil), l.mu.epochs...)
}

// lockState write-locks l.mu and changes the state generation
// (StateGen) and the process-wide count of such changes (StateChanges).
// Every writer of l.mu's fields takes it this way.
func (l *Log) lockState() {
	l.mu.Lock()
	l.stateGen.Add(1)
	stateChanges.Add(1)
}

// stateChanges counts the state changes of every log of the process.
var stateChanges atomic.Uint64

// StateChanges returns the number of times any log of the process has
// changed its state (log end, log start, epochs, segments: StateGen of
// each log). While it stays the same, no log's StateGen has changed: a
// follower fetcher over thousands of idle partitions reads it once a
// round instead of each partition's generation.
func StateChanges() uint64 { return stateChanges.Load() }

// StateGen returns the log's state generation, without a lock: it changes
// whenever the log end, the log start, the leader-epoch history or any
// other state under the log's lock may have changed. A caller that read
// PositionGen at generation g may keep what it read while StateGen is
// still g.
func (l *Log) StateGen() uint64 { return l.stateGen.Load() }

// PositionGen returns the log end offset, the log start offset and the
// newest leader epoch (UndefinedEpoch for none) as of one moment, under one
// read lock (what a follower's Fetch of the log asks), with the state
// generation they were read at (StateGen).
func (l *Log) PositionGen() (leo, logStart int64, latestEpoch int32, gen uint64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	latestEpoch = UndefinedEpoch
	if e, ok := l.mu.epochs.latest(); ok {
		latestEpoch = e.Epoch
	}
	return l.mu.leo, l.mu.logStart, latestEpoch, l.stateGen.Load()
}

// LatestEpochEntry returns the newest entry of the leader-epoch history
// (its epoch and start offset), and false when the history is empty. Unlike
// Epochs it copies nothing.
func (l *Log) LatestEpochEntry() (EpochEntry, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.latest()
}

// LatestEpoch returns the newest leader epoch in the log, or UndefinedEpoch.
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if e, ok := l.mu.epochs.latest(); ok {
		return e.Epoch
	}
	return UndefinedEpoch
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch <=
// requested and the offset where it ended (the start offset of the next
// higher epoch, or the LEO for the latest epoch). An epoch above every known
// one, or a log without epochs, gives (UndefinedEpoch, UndefinedEpochOffset).
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.endOffsetFor(epoch, l.mu.leo)
}

// Close stops the background flusher, flushes (every segment, including
// rolled ones the flusher had not reached), seals and trims every index,
// closes the files and writes the clean-shutdown marker, so the next Open
// trusts the files without a rescan. Segments waiting for delayed deletion
// are removed now. Close is idempotent; every other method returns
// ErrClosed afterwards.
func (l *Log) Close() error {
	l.writer.Lock()
	defer l.writer.Unlock()
	l.uncountFlushLocked() // MaybeFlush answers ErrClosed from now on
	l.stopFlusher()
	if l.mu.closed {
		return nil
	}
	err := l.flushLocked()
	l.lockState()
	defer l.mu.Unlock()
	l.mu.closed = true
	for _, s := range l.mu.segments {
		s.sealTimeIndex()
		if e := s.close(true); err == nil {
			err = e
		}
	}
	for _, p := range l.w.pendingDeletes {
		p.seg.close(false)
		p.seg.removeFiles()
	}
	l.w.pendingDeletes = nil
	if err == nil {
		// The marker goes last: only a fully flushed, trimmed log is clean.
		if err = writeFileAtomic(l.fs, l.dir, cleanShutdownFile, nil); err != nil {
			l.fs.Remove(l.dir + "/" + cleanShutdownFile)
		}
	}
	return err
}

// scanCount is how many segments Open or later recovery re-read batch by
// batch (tests use it to prove a clean reopen reads no data).
func (l *Log) scanCount() int {
	l.writer.Lock()
	defer l.writer.Unlock()
	return l.w.scans
}
