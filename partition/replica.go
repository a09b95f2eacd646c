// Package partition is one local replica of one partition: its segment log,
// its role and leader epoch, the log end offset and high watermark, the
// idempotent and transactional producer state with the last stable offset
// (txn.go), and the waiters for acks=all and long polls.
//
// It sits above segment (bytes on disk) and below the protocol packages
// (ingest's Produce, fetch's Fetch), which translate its errors to Kafka codes.
package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/invariants"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// Errors of the append path, beside those of batch and ProducerState.
var (
	// ErrNotLeader: this replica does not lead the partition (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("partition: not the leader")
	// ErrInvalidTimestamp: a CreateTime timestamp is outside the topic's
	// message.timestamp.before/after.max.ms window (INVALID_TIMESTAMP).
	ErrInvalidTimestamp = errors.New("partition: timestamp out of range")
	// ErrOneBatch: Produce v3+ carries exactly one record batch per partition (INVALID_RECORD).
	ErrOneBatch = errors.New("partition: a produce must carry exactly one record batch")
	// ErrControlBatch: clients may not write control batches (INVALID_RECORD).
	ErrControlBatch = errors.New("partition: control batches may not be produced")
	// ErrClosed: the replica is closed.
	ErrClosed = errors.New("partition: replica closed")
)

// Options configure a Replica.
type Options struct {
	Dir       string              // the partition directory, <data dir>/<topic>-<partition>
	Topic     string              // topic name
	Partition int32               // partition number
	Config    *config.TopicConfig // effective topic config
	// LeaderEpoch is the leader epoch the replica opens at, as a
	// follower: it leads only once SetLeadership says so (the control
	// plane's decision, applied by the broker).
	LeaderEpoch int32
	Now         func() time.Time // clock; default time.Now
	Logger      *slog.Logger     // default slog.Default()
	// MaxDecompressed bounds the size of one decompressed batch during
	// broker-side recompression. Default 64 MiB.
	MaxDecompressed int
	// WritebackBytes is segment.Config.WritebackBytes (the broker's
	// log_writeback_bytes); 0 leaves writeback to the kernel.
	WritebackBytes int64
	// HWCheckpoints is the log dir's high watermark checkpoint
	// (hw_checkpoint.go), which the replica registers with; its owner
	// writes it. Nil gives the replica a private one in Dir, written by
	// MaybeFlush every HWCheckpointInterval and by Close.
	HWCheckpoints *HWCheckpoints
	// TopicID is the topic's id, recorded with the checkpoint entry so
	// that a topic re-created under the same name never takes an old
	// entry; zero when unknown.
	TopicID [16]byte
	// HWCheckpointInterval is how often, at most, MaybeFlush writes a
	// private checkpoint when the high watermark moved (Kafka's
	// replica.high.watermark.checkpoint.interval.ms). Default
	// DefaultHWCheckpointInterval.
	HWCheckpointInterval time.Duration
	// OnISRExpandable, if set, is called when a follower fetch makes a
	// follower outside the ISR eligible to join it (its log end reached the
	// high watermark and the start of the leader's epoch), so that the
	// broker proposes the expansion at once rather than at its next
	// periodic check. It is called without the replica's locks held and
	// must not block.
	OnISRExpandable func()
	// ProducerIDExpiration is Kafka's producer.id.expiration.ms: a
	// producer with no transaction open whose last batch is this old is
	// forgotten at ExpireProducers and when producer state is rebuilt
	// from a snapshot and the log (Open, truncation). 0 never expires.
	ProducerIDExpiration time.Duration
	// FS is the filesystem of the partition directory: the segment log
	// (segment.Config.FS), the producer-state snapshots and a private high
	// watermark checkpoint live on it. Default vfs.Default, the operating
	// system's; tests use vfs.NewMem to crash it and vfs.WithErrors to fail
	// its calls.
	FS vfs.FS
}

// Replica is one partition's local replica. Appends are serialised by
// appendMu; reads go to the segment log concurrently.
//
// It opens as a follower at Options.LeaderEpoch, with the high watermark
// of its log dir's checkpoint (hw_checkpoint.go), and leads only once SetLeadership
// makes it leader.
//
// Locks, in the order they are taken (a goroutine holding one may take
// only those below it; never the other way round):
//
//	appendMu    serialises the log's writers: appends, truncation, resets, role changes to leader, Close
//	(HWCheckpoints.wmu: a checkpoint write, which reads each replica's ckpt and mu)
//	ckpt        the high watermark last given to a checkpoint write
//	mu          the role, epoch, high watermark, assignment and follower progress; held briefly, no I/O under it
//	remote      the tiering manager's remote state; a leaf (taken alone or under appendMu, never under mu)
//
// segment.Log has its own locks below all of these: the replica calls the
// log under any of them, and the log never calls back into the replica
// except through OnRoll (onRoll), which runs under the log's writer lock
// inside an append, so appendMu is already held and onRoll takes no
// replica lock.
type Replica struct {
	topic     string
	partition int32
	dir       string
	fs        vfs.FS // Options.FS
	log       *segment.Log
	logger    *slog.Logger
	now       func() time.Time
	maxDecomp int
	writeback int64 // segment.Config.WritebackBytes
	// onExpandable is Options.OnISRExpandable.
	onExpandable func()
	// pidExpiration is Options.ProducerIDExpiration.
	pidExpiration time.Duration

	// appendMu serialises appends, so producer state and offsets agree.
	appendMu  sync.Mutex
	producers *ProducerState // REQUIRES: appendMu held
	// pending is the follower append in progress and pendingNext the end of
	// its batches applied to producers so far (applyPendingBelow).
	// REQUIRES: appendMu held.
	pending     []batch.Checked
	pendingNext int64
	// txnDone are the transactions completed by the batches applied since
	// the last publishTxnStateLocked. REQUIRES: appendMu held.
	txnDone []txnRange
	// abortedPending are the aborted transactions noted for the
	// transaction index and not yet written (writeAbortedLocked).
	// REQUIRES: appendMu held.
	abortedPending []segment.AbortedTxn
	// guards are the produce path's verifications in progress by
	// producer id, guardSeq the last one handed out (txn.go).
	// REQUIRES: appendMu held.
	guards   map[int64]verification
	guardSeq uint64

	// remote is the tiering manager's view of the remote segments.
	remote struct {
		sync.Mutex
		state RemoteState
		known bool
		// gen changes (under the lock, before the state) whenever state
		// or known does: FetchPositionSince's check.
		gen atomic.Uint64
	}
	diskFull atomic.Bool // refuse appends with ErrDiskFull

	// watch lists the fetch sessions told of this replica's changes
	// (watch.go).
	watch watchers

	// ckpts is the high watermark checkpoint the replica is registered
	// with (hw_checkpoint.go); private when the replica owns it.
	ckpts   *HWCheckpoints
	private bool
	topicID [16]byte // Options.TopicID
	// ckpt is the replica's side of the checkpoint.
	ckpt struct {
		sync.Mutex
		hw int64 // the value last given to a write (or read at Open); -1 when none
	}

	// cfg is mu.cfg, for Config without the lock: the node's periodic
	// passes (tiering, retention) read every replica's config, and an idle
	// node of 10,000 partitions spent more in the locks than in the rest.
	// Stored under mu with mu.cfg.
	cfg atomic.Pointer[config.TopicConfig]

	mu struct {
		sync.Mutex
		cfg         *config.TopicConfig
		leaderEpoch int32
		leader      bool
		hw          int64
		hwChanged   chan struct{} // closed and replaced whenever hw moves
		closed      bool

		// Replication (replication.go): the assignment as the control
		// plane records it, and, while leading, each follower's progress.
		self     int32
		replicas []int32
		isr      []int32 // committed
		// pendingISR is the ISR proposed to the control plane and not
		// yet committed or refused (BeginISRChange); nil when none.
		pendingISR  []int32
		pendingBase int32     // the partition epoch it is written over
		pendingAt   time.Time // when it was proposed
		// partitionEpoch is the newest PartitionEpoch applied
		// (SetAssignmentAt, EndISRChange); -1 before any.
		partitionEpoch int32
		followers      map[int32]*followerState
		leoChanged     chan struct{} // closed and replaced on every append
		leaderAt       time.Time     // when this replica last became leader

		// Transactions (txn.go), as published from producer state:
		// the first offset of the earliest open transaction (-1: none)
		// and the completed ones whose markers may not be below the
		// high watermark yet.
		firstOpen    int64
		unreplicated []txnRange
	}
}

// SegmentConfig turns a topic config into the segment log's config.
func SegmentConfig(tc *config.TopicConfig, now func() time.Time, logger *slog.Logger) segment.Config {
	c := segment.Defaults()
	c.SegmentBytes = tc.Int64(config.SegmentBytes)
	c.SegmentAge = tc.Millis(config.SegmentMs)
	c.IndexIntervalBytes = int(tc.Int64(config.IndexIntervalBytes))
	c.SegmentIndexBytes = int(tc.Int64(config.SegmentIndexBytes))
	if n := tc.Int64(config.FlushMessages); n < 1<<62 {
		c.FlushMessages = n
	}
	if d := tc.Millis(config.FlushMs); d < 1<<62 {
		c.FlushInterval = d
	}
	c.FileDeleteDelay = tc.Millis(config.FileDeleteDelayMs)
	if now != nil {
		c.Now = now
	}
	if logger != nil {
		c.Logger = logger
	}
	return c
}

// Open opens (recovering if needed) the replica's log and rebuilds its
// producer state from the newest snapshot plus the batches after it.
func Open(opts Options) (*Replica, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxDecompressed == 0 {
		opts.MaxDecompressed = 64 << 20
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	r := &Replica{
		topic: opts.Topic, partition: opts.Partition, dir: opts.Dir, fs: opts.FS,
		logger:        opts.Logger.With("topic", opts.Topic, "partition", opts.Partition),
		now:           opts.Now,
		maxDecomp:     opts.MaxDecompressed,
		writeback:     opts.WritebackBytes,
		onExpandable:  opts.OnISRExpandable,
		pidExpiration: opts.ProducerIDExpiration,
	}
	segCfg := SegmentConfig(opts.Config, opts.Now, r.logger)
	segCfg.WritebackBytes = r.writeback
	segCfg.OnRoll = r.onRoll
	segCfg.FS = opts.FS
	l, err := segment.Open(opts.Dir, segCfg)
	if err != nil {
		return nil, err
	}
	r.log = l
	ps, from, err := LoadLatestSnapshot(opts.FS, opts.Dir, l.LogEndOffset())
	if err != nil {
		l.Close()
		return nil, err
	}
	// The transaction index is rebuilt by the replay for the markers at
	// and after its start (written after a snapshot, they may have been
	// lost or, past a crash's cut, be stale).
	from = max(from, l.LogStartOffset())
	if err := l.DropAbortedTxnsFrom(from); err != nil {
		l.Close()
		return nil, err
	}
	if err := r.replayProducers(ps, from); err != nil {
		l.Close()
		return nil, err
	}
	if err := r.writeAbortedLocked(); err != nil {
		l.Close()
		return nil, err
	}
	r.removeExpired(ps)
	r.producers = ps
	r.mu.cfg = opts.Config
	r.cfg.Store(opts.Config)
	r.publishTxnStateLocked()
	r.mu.leaderEpoch = opts.LeaderEpoch
	r.mu.leader = false
	r.mu.hwChanged = make(chan struct{})
	r.mu.leoChanged = make(chan struct{})
	r.mu.self = -1
	r.mu.partitionEpoch = -1
	r.mu.leaderAt = opts.Now()

	// The high watermark is the checkpointed one, never the log end: the
	// records above it may never have been committed (Kafka's
	// replication-offset-checkpoint). A crash that lost the log's
	// unflushed tail can leave the checkpoint past the log end; it is then
	// rewritten at once, or records appended later at those offsets would
	// count as committed at the next open.
	r.ckpts, r.topicID = opts.HWCheckpoints, opts.TopicID
	if r.ckpts == nil {
		r.ckpts = OpenHWCheckpoints(opts.Dir, HWCheckpointOptions{Interval: opts.HWCheckpointInterval, Now: opts.Now, Logger: r.logger, FS: opts.FS})
		r.private = true
	}
	ckpt, ok, old := r.openCheckpoint(opts)
	r.mu.hw = openingHW(ckpt, ok, l.LogStartOffset(), l.LogEndOffset())
	r.ckpt.hw = -1
	if ok {
		r.ckpt.hw = ckpt
	}
	r.ckpts.register(r, old)
	if ok && ckpt != r.mu.hw {
		if err := r.ckpts.WriteNow(); err != nil {
			r.ckpts.closed(r, hwEntry{}, false)
			l.Close()
			return nil, err
		}
	}
	return r, nil
}

// replayProducers applies the batches from offset `from` to the log end to
// ps, noting the transactions they complete (completedLocked).
func (r *Replica) replayProducers(ps *ProducerState, from int64) error {
	for off := from; off < r.log.LogEndOffset(); {
		b, err := r.log.ReadBytes(off, 1<<20, r.log.LogEndOffset(), true)
		if err != nil {
			return fmt.Errorf("replaying producer state at %d: %w", off, err)
		}
		if len(b) == 0 {
			break
		}
		next := off
		err = batch.Split(b, func(h *batch.Header, raw []byte) error {
			if txn, ok := ps.Apply(h, raw); ok {
				r.completedLocked(ps, txn)
			}
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			return fmt.Errorf("replaying producer state at %d: %w", off, err)
		}
		if next <= off {
			break
		}
		off = next
	}
	return nil
}

// onRoll snapshots producer state at each segment roll. The log calls it with
// its writer lock held, from inside an Append (so appendMu is held) or Roll.
// Every local segment keeps the snapshot taken at its end (tiering uploads
// it with the segment); retention prunes them with the segments. In a
// follower's append of several batches, those before the roll are applied
// first (applyPendingBelow).
func (r *Replica) onRoll(newBase int64) {
	r.applyPendingBelow(newBase)
	if len(r.abortedPending) > 0 {
		// A follower append's ABORT marker below the roll is not yet in
		// the transaction index (written once the append returns, outside
		// the log's writer lock): a snapshot here would let a crash in
		// between lose its entry, since recovery replays only from the
		// newest snapshot. Without it, recovery replays from an older one
		// and SnapshotAt rebuilds this one for tiering.
		return
	}
	// No fsync here, on the append path: SnapshotAt rebuilds a snapshot a
	// crash lost, and recovery falls back to an older one.
	if err := r.producers.writeSnapshotNoSync(r.fs, r.dir, newBase, 0); err != nil {
		r.logger.Warn("producer state snapshot failed", "offset", newBase, "err", err)
	}
}

// Log exposes the segment log for reads (fetch, retention, tiering).
func (r *Replica) Log() *segment.Log { return r.log }

// Topic and Partition name the replica.
func (r *Replica) Topic() string    { return r.topic }
func (r *Replica) Partition() int32 { return r.partition }

// Config returns the effective topic config.
func (r *Replica) Config() *config.TopicConfig {
	return r.cfg.Load()
}

// SetConfig installs a new effective topic config (AlterConfigs). Segment
// settings take effect for the next segment.
func (r *Replica) SetConfig(tc *config.TopicConfig) {
	r.mu.Lock()
	r.mu.cfg = tc
	r.cfg.Store(tc)
	replicaChanges.Add(1)
	r.wakeLocked() // acks=all waiters check min.insync.replicas again
	r.mu.Unlock()
	segCfg := SegmentConfig(tc, r.now, r.logger)
	segCfg.WritebackBytes = r.writeback
	if err := r.log.SetConfig(segCfg); err != nil {
		r.logger.Warn("new topic config not applied to the log", "err", err)
	}
}

// LeaderEpoch returns the current leader epoch.
func (r *Replica) LeaderEpoch() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.leaderEpoch
}

// HighWatermark returns the high watermark: consumers see offsets below it.
func (r *Replica) HighWatermark() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.hw
}

// HWChanged returns a channel closed the next time the high watermark moves
// (or the replica closes). Long polls select on it instead of sleeping.
func (r *Replica) HWChanged() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.hwChanged
}

// replicaChanges counts the changes of every replica of the process to its
// high watermark, role, leader epoch or config (ReplicaChanges).
var replicaChanges atomic.Uint64

// ReplicaChanges returns a count that moves whenever any replica of the
// process changes its high watermark (so its last stable offset), its role,
// its leader epoch or its config. With segment.StateChanges (the logs) it
// tells a pass over every replica whether anything it reads has changed
// (the tiering pass over idle partitions).
func ReplicaChanges() uint64 { return replicaChanges.Load() }

// setHW moves the high watermark and wakes waiters.
// REQUIRES: r.mu held.
func (r *Replica) setHW(hw int64) {
	if hw == r.mu.hw {
		return
	}
	if invariants.Enabled {
		leo := r.log.LogEndOffset()
		invariants.Check(hw <= leo, "%s-%d: high watermark %d past the log end %d", r.topic, r.partition, hw, leo)
	}
	r.mu.hw = hw
	replicaChanges.Add(1)
	r.ckpts.changed()
	close(r.mu.hwChanged)
	r.mu.hwChanged = make(chan struct{})
	r.notifyWatchers()
}

// AppendResult is what a produce answers for one partition.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	Duplicate      bool // a retried batch: nothing was written, offsets are the original ones
	// LeaderEpoch is the epoch the batch was appended in; acks=all waits
	// with it (WaitCommitted).
	LeaderEpoch int32
}

// leaderWritable returns the topic config of a replica that may take a
// leader's append now: else ErrClosed, ErrNotLeader, ErrDiskFull, or the
// log's error once it is offline (then not even a duplicate is
// acknowledged).
func (r *Replica) leaderWritable() (*config.TopicConfig, error) {
	r.mu.Lock()
	tc, leader, closed := r.mu.cfg, r.mu.leader, r.mu.closed
	r.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case !leader:
		return nil, ErrNotLeader
	case r.diskFull.Load():
		return nil, ErrDiskFull
	}
	return tc, r.log.Err()
}

// appendEpoch is the leader epoch a leader's append writes in, or
// ErrNotLeader. SetLeadership records a new epoch in the log under
// appendMu: the role is read again under it, so that no batch of an older
// epoch lands after the new epoch's start in the history.
// REQUIRES: r.appendMu held.
func (r *Replica) appendEpoch() (int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.mu.leader {
		return 0, ErrNotLeader
	}
	return r.mu.leaderEpoch, nil
}

// AppendLeader validates one producer's record set (exactly one batch),
// modifying records in place (offsets, leader epoch, LogAppendTime),
// applies the topic's compression and timestamp type, checks idempotence,
// and appends. The returned error wraps batch's, ProducerState's or this
// package's sentinels.
func (r *Replica) AppendLeader(records []byte) (AppendResult, error) {
	return r.appendLeader(records, 0)
}

// appendLeader is AppendLeader; a non-zero guard is AppendLeaderVerified's.
func (r *Replica) appendLeader(records []byte, guard VerificationGuard) (AppendResult, error) {
	tc, err := r.leaderWritable()
	if err != nil {
		return AppendResult{}, err
	}
	h, err := batch.Validate(records, int(tc.Int64(config.MaxMessageBytes)))
	if err != nil {
		if errors.Is(err, batch.ErrCorrupt) && len(records) > batch.HeaderSize {
			if h2, err2 := batch.ParseHeader(records); err2 == nil && h2.Size() < len(records) {
				return AppendResult{}, ErrOneBatch
			}
		}
		return AppendResult{}, err
	}
	if h.Control() {
		return AppendResult{}, ErrControlBatch
	}
	now := r.now().UnixMilli()
	logAppendTime := int64(-1)
	if tc.String(config.MessageTimestampType) == "LogAppendTime" {
		logAppendTime = now
	} else if err := checkTimestamps(&h, now, tc); err != nil {
		return AppendResult{}, err
	}

	// The header Validate parsed travels down with the bytes: every change
	// below goes through batch.Checked, which keeps the two in step, and
	// the log parses no header again (checkHandedDown).
	one := [1]batch.Checked{{Header: h, Raw: records}}
	c := &one[0]
	// Compression: the topic's compression.type wins unless it is "producer".
	if want, ok := targetCodec(tc.String(config.CompressionType)); ok && want != c.Header.Codec() {
		if err := c.Recompress(want, r.maxDecomp); err != nil {
			return AppendResult{}, err
		}
	}
	// Otherwise the batch is stamped (offsets, epoch, LogAppendTime) in the
	// caller's buffer: the contract of AppendLeader is that the caller owns
	// records for the duration of the call and lets it be modified (the
	// produce path passes the request's frame, which is its own until the
	// reply is written). Not copying saves an allocation and a copy per
	// batch on the hot path.
	if logAppendTime >= 0 {
		// Producer state keeps the batch's max timestamp as written, as
		// the replay of the log and the followers see it: the stamper
		// sets it in the header too.
		c.SetLogAppendTime(logAppendTime)
	}

	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	epoch, err := r.appendEpoch()
	if err != nil {
		return AppendResult{}, err
	}
	dup, err := r.producers.Check(&c.Header)
	if err != nil {
		return AppendResult{}, err
	}
	if err := r.checkGuardLocked(&c.Header, guard, dup != nil); err != nil {
		return AppendResult{}, err
	}
	if dup != nil {
		return AppendResult{BaseOffset: dup.FirstOffset, LastOffset: dup.LastOffset, LogAppendTime: logAppendTime,
			LogStartOffset: r.LogStartOffset(), Duplicate: true, LeaderEpoch: epoch}, nil
	}
	info, err := r.log.AppendChecked(one[:], epoch)
	if invariants.Enabled {
		r.checkHandedDown(one[:len(info.Batches)])
	}
	// A batch that landed is in producer state whatever the append
	// answers (a flush that failed after the write): otherwise the
	// producer's retry would be written again. It is also replicated
	// from here, like any batch in the log. The log stamped its offsets
	// into the header.
	for i := range info.Batches {
		r.producers.Update(&one[i].Header)
	}
	return r.appended(info, err, c.Header.Transactional(), logAppendTime, epoch)
}

// appended ends a leader's append of info in epoch (err: the log's, with
// what it wrote): when something was written it wakes what waits on the
// log and moves the high watermark, publishing the transaction state
// first when txn; then it answers err, or the append's result.
// REQUIRES: r.appendMu held.
func (r *Replica) appended(info segment.AppendInfo, err error, txn bool, logAppendTime int64, epoch int32) (AppendResult, error) {
	if len(info.Batches) > 0 {
		r.mu.Lock()
		if txn {
			r.publishTxnStateLocked()
		}
		r.signalAppendLocked()
		r.maybeAdvanceHWLocked()
		r.mu.Unlock()
	}
	if err != nil {
		return AppendResult{}, err
	}
	return AppendResult{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset, LogAppendTime: logAppendTime,
		LogStartOffset: r.LogStartOffset(), LeaderEpoch: epoch}, nil
}

// checkHandedDown checks the invariant of the append paths that hand a
// parsed batch down (batch.Checked): each header, parsed once at the top
// and stamped since through the Checked's stampers, is what ParseHeader
// reads from the bytes the log wrote.
func (r *Replica) checkHandedDown(bs []batch.Checked) {
	for i := range bs {
		h, err := batch.ParseHeader(bs[i].Raw)
		invariants.Check(err == nil && h == bs[i].Header, "%s-%d: batch handed down with header %+v, its bytes %+v (%v)",
			r.topic, r.partition, bs[i].Header, h, err)
	}
}

func targetCodec(compressionType string) (batch.Codec, bool) {
	switch compressionType {
	case "uncompressed", "none":
		return batch.CodecNone, true
	case "gzip":
		return batch.CodecGzip, true
	case "snappy":
		return batch.CodecSnappy, true
	case "lz4":
		return batch.CodecLZ4, true
	case "zstd":
		return batch.CodecZstd, true
	}
	return 0, false
}

func checkTimestamps(h *batch.Header, now int64, tc *config.TopicConfig) error {
	before, after := tc.Int64(config.MessageTimestampBeforeMax), tc.Int64(config.MessageTimestampAfterMax)
	for _, ts := range [2]int64{h.FirstTimestamp, h.MaxTimestamp} {
		if ts < 0 && ts != -1 {
			return fmt.Errorf("%w: timestamp %d", ErrInvalidTimestamp, ts)
		}
		if ts == -1 {
			continue
		}
		if now-ts > before || ts-now > after {
			return fmt.Errorf("%w: timestamp %d, broker time %d", ErrInvalidTimestamp, ts, now)
		}
	}
	return nil
}

// WaitCommitted waits until the high watermark passes offset, a record this
// replica appended as leader in epoch (AppendResult.LeaderEpoch): acks=all.
// With one replica the append itself moves the high watermark, so it
// returns at once; replication makes the wait real. It fails with ErrNotLeader as soon as the replica no
// longer leads in that epoch, even if its high watermark has passed offset
// since: a deposed leader becomes a follower, cuts its divergent tail and
// takes the new leader's records and high watermark, so the record at
// offset may no longer be the one it appended.
func (r *Replica) WaitCommitted(ctx context.Context, offset int64, epoch int32) error {
	for {
		r.mu.Lock()
		hw, ch, closed, leader, current := r.mu.hw, r.mu.hwChanged, r.mu.closed, r.mu.leader, r.mu.leaderEpoch
		r.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if !leader || current != epoch {
			return ErrNotLeader
		}
		if hw > offset {
			return nil
		}
		if r.isrBelowMin() {
			return ErrNotEnoughReplicasAfterAppend
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Read returns file positions of whole batches from offset, below the high
// watermark, for the fetch path (see segment.Log.Read).
func (r *Replica) Read(offset int64, maxBytes int, minOneBatch bool) (segment.ReadResult, error) {
	return r.log.Read(offset, maxBytes, r.HighWatermark(), minOneBatch)
}

// DeleteRecordsBefore moves the log start offset to offset (DeleteRecords),
// deleting whole segments below it. offset must not pass the high watermark.
func (r *Replica) DeleteRecordsBefore(offset int64) (int64, error) {
	if hw := r.HighWatermark(); offset > hw || offset < 0 {
		return 0, fmt.Errorf("%w: %d not in [0, %d]", segment.ErrOffsetOutOfRange, offset, hw)
	}
	_, err := r.log.DeleteSegmentsBefore(offset)
	r.notifyWatchers() // the log start moved
	if err != nil {
		return 0, err
	}
	PruneSnapshots(r.fs, r.dir, r.log.LogStartOffset())
	return r.log.LogStartOffset(), nil
}

// LogErr is the log's sticky fsync error (wrapping segment.ErrSyncFailed),
// or nil. Once set the log takes no more appends (KAFKA_STORAGE_ERROR, a
// retriable code): the owner should move leadership away from this
// replica.
func (r *Replica) LogErr() error { return r.log.Err() }

// MaybeFlush applies flush.ms and writes the high watermark checkpoint when
// it is due (called periodically by the owner).
func (r *Replica) MaybeFlush() error {
	err := r.log.MaybeFlush()
	if !r.private {
		return err // the checkpoint's owner writes it
	}
	if e := r.ckpts.MaybeWrite(); err == nil {
		err = e
	}
	return err
}

// Close flushes, snapshots producer state at the log end, checkpoints the
// high watermark, and closes the log with its clean-shutdown marker.
// Waiters are woken with ErrClosed.
func (r *Replica) Close() error {
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return nil
	}
	r.mu.closed = true
	close(r.mu.hwChanged)
	r.mu.hwChanged = make(chan struct{})
	r.notifyWatchers()
	r.mu.Unlock()
	r.appendMu.Lock()
	defer r.appendMu.Unlock()
	if err := r.producers.WriteSnapshot(r.fs, r.dir, r.log.LogEndOffset(), 0); err != nil {
		r.logger.Warn("producer state snapshot at close failed", "err", err)
	}
	if r.private {
		if err := r.ckpts.WriteNow(); err != nil {
			r.logger.Warn("high watermark checkpoint at close failed", "err", err)
		}
	}
	// A shared checkpoint keeps the last value until its owner forgets
	// the partition, and writes it at its next write.
	e, ok := r.checkpointEntry()
	r.ckpts.closed(r, e, ok)
	return r.log.Close()
}

// ErrUnknownTopicOrPartition: no such partition on this node (UNKNOWN_TOPIC_OR_PARTITION).
var ErrUnknownTopicOrPartition = errors.New("partition: unknown topic or partition")

// ErrNotEnoughReplicas: acks=all with fewer in-sync replicas than
// min.insync.replicas (NOT_ENOUGH_REPLICAS).
var ErrNotEnoughReplicas = errors.New("partition: not enough in-sync replicas")

// RetentionPlan decides, without touching the disk, the new log start offset
// that time and size retention call for: the next offset of the last closed
// segment that is past retention.ms (by its max timestamp) or whose removal
// still leaves at least retention.bytes. It returns -1 when nothing is
// due. The active segment is never chosen.
func RetentionPlan(segs []segment.SegmentInfo, now time.Time, retentionMs, retentionBytes int64) int64 {
	var total int64
	for _, s := range segs {
		total += s.Size
	}
	newStart := int64(-1)
	for i, s := range segs {
		if s.Active || i == len(segs)-1 {
			break
		}
		expired := retentionMs >= 0 && s.MaxTimestamp >= 0 && now.UnixMilli()-s.MaxTimestamp > retentionMs
		// As Kafka: a segment goes for size only if what stays is still at
		// least retention.bytes.
		oversize := retentionBytes >= 0 && total-s.Size >= retentionBytes
		if !expired && !oversize {
			break
		}
		total -= s.Size
		newStart = s.NextOffset
	}
	return newStart
}

// ApplyRetention deletes the closed segments that retention.ms and
// retention.bytes no longer keep, moving the local log start offset. With
// remote.storage.enable, only segments committed to the bucket go, once past
// local.retention.ms/bytes (see TieredRetentionPlan); the remote ones are
// the tiering manager's to delete.
func (r *Replica) ApplyRetention(now time.Time) error {
	tc := r.Config()
	if strings.Contains(tc.String(config.CleanupPolicy), "compact") {
		if _, err := r.Compact(now); err != nil {
			return err
		}
		if tc.String(config.CleanupPolicy) == "compact" {
			return nil
		}
	}
	if tc.Bool(config.RemoteStorageEnable) {
		return r.applyTieredRetention(now, tc)
	}
	if r.log.SegmentCount() == 1 {
		return nil // the active segment is never deleted (RetentionPlan)
	}
	start := RetentionPlan(r.log.Segments(), now, tc.Int64(config.RetentionMs), tc.Int64(config.RetentionBytes))
	if start < 0 || start <= r.log.LogStartOffset() {
		return nil
	}
	n, err := r.log.DeleteSegmentsBefore(start)
	r.notifyWatchers() // the log start moved
	if err == nil && n > 0 {
		PruneSnapshots(r.fs, r.dir, r.log.LogStartOffset())
		r.logger.Info("retention deleted segments", "segments", n, "log_start_offset", r.log.LogStartOffset())
	}
	return err
}
