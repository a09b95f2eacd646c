package partition

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/vfs"
)

// The high watermark checkpoint: Kafka's replication-offset-checkpoint,
// one file per log dir holding every partition's high watermark (issue 23:
// one file per partition cost each partition a file write, two fsyncs and a
// rename every interval while it took writes). HWCheckpoints owns the file;
// the replicas of its log dir register with it at Open. The whole file is
// rewritten (temp file, fsync, rename, directory fsync:
// segment.WriteFileAtomic) at most every interval when a high watermark
// moved (MaybeWrite, which the owner calls periodically), at once when a
// truncation takes a replica's high watermark below the value it may have
// written (WriteNow, coalescing the truncations that wait together), and
// when the owner flushes it after closing its replicas. Open reads a
// replica's entry back, clamped to the log's [log start, log end], as
// Kafka's log loading does: a replica reopened after a crash exposes no
// offset that was not committed, only (at worst) fewer than were.
//
// Each entry carries the topic id (version 1 of the format; version 0,
// Kafka's, has none and is what a file without ids is written as): an entry
// of a deleted topic left in the file until the next write must not count
// for a topic re-created under its name.
//
// A replica opened without an HWCheckpoints (tools, tests of one replica)
// gets a private one in its own directory, which is the file layout of
// earlier versions; a replica of a log dir whose shared file has no entry
// for it reads that older per-partition file, and the first shared write
// that includes it removes the older file.

// HWCheckpointFile is the checkpoint's name in a log dir (or, for a
// replica opened alone, in its partition directory).
const HWCheckpointFile = "replication-offset-checkpoint"

// DefaultHWCheckpointInterval is Kafka's replica.high.watermark.checkpoint.interval.ms.
const DefaultHWCheckpointInterval = 5 * time.Second

// hwKey names a partition in the checkpoint.
type hwKey struct {
	topic     string
	partition int32
}

// hwEntry is one partition's checkpointed high watermark.
type hwEntry struct {
	hw      int64
	topicID [16]byte // zero: not recorded
}

// HWCheckpoints is one log dir's high watermark checkpoint. Safe for
// concurrent use.
//
// Locks, in order: wmu (a whole write), then a replica's ckpt and mu
// (taken one replica at a time to read its high watermark), then c.mu
// (the registry). A replica calls WriteNow holding its appendMu and no
// other of its locks.
type HWCheckpoints struct {
	fs       vfs.FS
	dir      string
	interval time.Duration
	now      func() time.Time
	logger   *slog.Logger

	// requests counts WriteNow calls; a write covers every request counted
	// before it started reading high watermarks.
	requests atomic.Uint64

	// changes counts what may change an entry: a high watermark moved, a
	// log reset under one, a replica registered or closed, an entry
	// forgotten. MaybeWrite reads no replica when it has not moved since
	// the last write read them all (wmu.changes), so an idle node's
	// periodic pass costs nothing per partition.
	changes atomic.Uint64
	// reads counts the replicas' entries read by writes (tests).
	reads atomic.Int64

	wmu struct {
		sync.Mutex
		last    map[hwKey]hwEntry // the file's entries as last written (or read)
		exists  bool              // the file is on disk
		at      time.Time         // when it was last written
		covered uint64            // requests covered by the last write
		changes uint64            // changes as read before the last complete read of every entry; 0: none yet
		err     error             // that write's result
	}

	mu struct {
		sync.Mutex
		read map[hwKey]hwEntry     // the file as read at open
		reps map[hwKey]*Replica    // the open replicas
		kept map[hwKey]hwEntry     // entries of replicas not open: read at open, or a closed replica's last value; until Forget
		old  map[*Replica]struct{} // replicas that read an older per-partition file
	}
}

// HWCheckpointOptions configure OpenHWCheckpoints.
type HWCheckpointOptions struct {
	// Interval is how often, at most, MaybeWrite rewrites the file when a
	// high watermark moved (Kafka's
	// replica.high.watermark.checkpoint.interval.ms). Default
	// DefaultHWCheckpointInterval.
	Interval time.Duration
	Now      func() time.Time // default time.Now
	Logger   *slog.Logger     // default slog.Default()
	// FS is the log dir's filesystem (the one its replicas' logs use).
	// Default vfs.Default.
	FS vfs.FS
}

// OpenHWCheckpoints reads the checkpoint of log dir dir. A missing file is
// an empty checkpoint; an unreadable one is logged and treated as empty
// (every replica then opens at its log start, which is always safe) and
// replaced at the next write.
func OpenHWCheckpoints(dir string, opts HWCheckpointOptions) *HWCheckpoints {
	if opts.Interval <= 0 {
		opts.Interval = DefaultHWCheckpointInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	c := &HWCheckpoints{fs: opts.FS, dir: dir, interval: opts.Interval, now: opts.Now, logger: opts.Logger}
	c.mu.reps = map[hwKey]*Replica{}
	c.mu.kept = map[hwKey]hwEntry{}
	c.mu.old = map[*Replica]struct{}{}
	b, err := c.fs.ReadFile(filepath.Join(dir, HWCheckpointFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		c.logger.Warn("high watermark checkpoint unreadable; replicas open at their log start", "dir", dir, "err", err)
		c.wmu.exists = true
	default:
		c.wmu.exists = true
		if c.mu.read, err = decodeHWCheckpoint(b); err != nil {
			c.logger.Warn("high watermark checkpoint unreadable; replicas open at their log start", "dir", dir, "err", err)
		}
	}
	// Entries of replicas not open yet (or offline) stay in the file until
	// they register or are forgotten. The last write's entries are a copy:
	// Forget changes read under mu, while writes compare with last under wmu.
	c.wmu.last = make(map[hwKey]hwEntry, len(c.mu.read))
	for k, e := range c.mu.read {
		c.mu.kept[k] = e
		c.wmu.last[k] = e
	}
	return c
}

// lookup returns the checkpointed high watermark of topic-p for the topic
// with id topicID (zero: any). An entry that names another topic id is
// not this topic's.
func (c *HWCheckpoints) lookup(topic string, p int32, topicID [16]byte) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.read[hwKey{topic, p}]
	if !ok || (e.topicID != [16]byte{} && topicID != [16]byte{} && e.topicID != topicID) {
		return 0, false
	}
	return e.hw, true
}

// register adds an opened replica; old says it read an older
// per-partition file, to remove once a shared write includes it.
func (c *HWCheckpoints) register(r *Replica, old bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := hwKey{r.topic, r.partition}
	c.mu.reps[k] = r
	delete(c.mu.kept, k)
	c.changed()
	if old {
		c.mu.old[r] = struct{}{}
	}
}

// closed replaces a closing replica by its last high watermark, kept in
// the file until Forget.
func (c *HWCheckpoints) closed(r *Replica, e hwEntry, keep bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := hwKey{r.topic, r.partition}
	if c.mu.reps[k] == r {
		c.changed()
		delete(c.mu.reps, k)
		if keep {
			c.mu.kept[k] = e
		}
	}
	delete(c.mu.old, r)
}

// Forget drops the entry of a partition that is not open from the next
// write and from what Open finds (its directory was deleted, or is being
// made anew).
func (c *HWCheckpoints) Forget(topic string, p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.kept, hwKey{topic, p})
	delete(c.mu.read, hwKey{topic, p})
	c.changed()
}

// ForgetUnless forgets every entry of a partition that is not open and
// for which keep is false (the owner's sweep of partitions no longer here).
func (c *HWCheckpoints) ForgetUnless(keep func(topic string, p int32) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.mu.kept {
		if !keep(k.topic, k.partition) {
			delete(c.mu.kept, k)
			delete(c.mu.read, k)
			c.changed()
		}
	}
}

// MaybeWrite rewrites the file if the last write is at least the interval
// old and a high watermark changed since.
func (c *HWCheckpoints) MaybeWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.now().Sub(c.wmu.at) < c.interval {
		return nil
	}
	if ch := c.changes.Load(); ch != 0 && ch == c.wmu.changes {
		c.wmu.at = c.now()
		return nil // nothing moved since every entry was last read
	}
	return c.writeLocked()
}

// changed notes that an entry may differ from the last write.
func (c *HWCheckpoints) changed() { c.changes.Add(1) }

// WriteNow rewrites the file if a high watermark changed, with every high
// watermark as of a moment after the call, and returns that write's
// result. Calls that wait together share one write.
func (c *HWCheckpoints) WriteNow() error {
	want := c.requests.Add(1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wmu.covered >= want {
		return c.wmu.err
	}
	covered := c.requests.Load()
	err := c.writeLocked()
	c.wmu.covered, c.wmu.err = covered, err
	return err
}

// writeLocked reads every registered replica's high watermark and rewrites
// the file if any entry differs from the last write. REQUIRES: wmu held.
func (c *HWCheckpoints) writeLocked() error {
	changes := c.changes.Add(1) // nonzero; what moves after this read is seen by the next write
	c.mu.Lock()
	reps := make([]*Replica, 0, len(c.mu.reps))
	for _, r := range c.mu.reps {
		reps = append(reps, r)
	}
	entries := make(map[hwKey]hwEntry, len(c.mu.reps)+len(c.mu.kept))
	for k, e := range c.mu.kept {
		entries[k] = e
	}
	c.mu.Unlock()
	c.reads.Add(int64(len(reps)))
	for _, r := range reps {
		if e, ok := r.checkpointEntry(); ok {
			entries[hwKey{r.topic, r.partition}] = e
		}
	}
	if c.wmu.exists && mapsEqual(entries, c.wmu.last) {
		c.wmu.at, c.wmu.changes = c.now(), changes
		return nil
	}
	if !c.wmu.exists && len(entries) == 0 {
		c.wmu.changes = changes
		return nil // no file says as much as an empty one
	}
	if err := segment.WriteFileAtomic(c.fs, c.dir, HWCheckpointFile, encodeHWCheckpoint(entries)); err != nil {
		return fmt.Errorf("writing the high watermark checkpoint: %w", err)
	}
	c.wmu.last, c.wmu.exists, c.wmu.at, c.wmu.changes = entries, true, c.now(), changes
	c.dropOlderFiles(entries)
	return nil
}

// dropOlderFiles removes the per-partition files of earlier versions that
// the file just written now covers.
func (c *HWCheckpoints) dropOlderFiles(written map[hwKey]hwEntry) {
	c.mu.Lock()
	var dirs []string
	for r := range c.mu.old {
		if _, ok := written[hwKey{r.topic, r.partition}]; ok && r.dir != c.dir {
			dirs = append(dirs, r.dir)
			delete(c.mu.old, r)
		}
	}
	c.mu.Unlock()
	for _, d := range dirs {
		if err := c.fs.Remove(filepath.Join(d, HWCheckpointFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			c.logger.Warn("removing an older per-partition high watermark checkpoint failed", "dir", d, "err", err)
		}
	}
}

// remove deletes the file after a failed write that had to lower an
// entry: without a file every replica opens at its log start, which is
// safe; with the old one a replica might not.
func (c *HWCheckpoints) remove() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	err := c.fs.Remove(filepath.Join(c.dir, HWCheckpointFile))
	if err == nil || errors.Is(err, os.ErrNotExist) {
		c.wmu.exists, c.wmu.last = false, nil
		return nil
	}
	return err
}

func mapsEqual(a, b map[hwKey]hwEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// encodeHWCheckpoint writes Kafka's checkpoint format: the version, the
// entry count, then "topic partition offset" per entry, sorted; version 1
// adds the topic id in hex to each line, and is used when any entry has
// one.
func encodeHWCheckpoint(entries map[hwKey]hwEntry) []byte {
	keys := make([]hwKey, 0, len(entries))
	withIDs := false
	for k, e := range entries {
		keys = append(keys, k)
		withIDs = withIDs || e.topicID != [16]byte{}
	}
	slices.SortFunc(keys, func(a, b hwKey) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition) - int(b.partition)
	})
	version := 0
	if withIDs {
		version = 1
	}
	b := make([]byte, 0, 16+len(keys)*(48+16))
	b = fmt.Appendf(b, "%d\n%d\n", version, len(keys))
	for _, k := range keys {
		e := entries[k]
		b = fmt.Appendf(b, "%s %d %d", k.topic, k.partition, e.hw)
		if withIDs {
			b = append(b, ' ')
			b = hex.AppendEncode(b, e.topicID[:])
		}
		b = append(b, '\n')
	}
	return b
}

// decodeHWCheckpoint parses a version 0 or 1 checkpoint; any malformed
// line, a count that does not match, a negative offset or a repeated
// partition is an error (the caller then trusts none of it).
func decodeHWCheckpoint(b []byte) (map[hwKey]hwEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	var lines []string
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", HWCheckpointFile, err)
	}
	if len(lines) < 2 || (lines[0] != "0" && lines[0] != "1") {
		return nil, fmt.Errorf("%s: not a version 0 or 1 checkpoint: %.64q", HWCheckpointFile, b)
	}
	fields := 3
	if lines[0] == "1" {
		fields = 4
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%s: count %q for %d entries", HWCheckpointFile, lines[1], len(lines)-2)
	}
	out := make(map[hwKey]hwEntry, n)
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != fields {
			return nil, fmt.Errorf("%s: entry %.64q", HWCheckpointFile, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		hw, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 || hw < 0 {
			return nil, fmt.Errorf("%s: entry %.64q", HWCheckpointFile, l)
		}
		e := hwEntry{hw: hw}
		if fields == 4 {
			id, err := hex.DecodeString(f[3])
			if err != nil || len(id) != 16 {
				return nil, fmt.Errorf("%s: topic id in %.64q", HWCheckpointFile, l)
			}
			copy(e.topicID[:], id)
		}
		k := hwKey{f[0], int32(p)}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: %s-%d listed twice", HWCheckpointFile, f[0], p)
		}
		out[k] = e
	}
	return out, nil
}

// openingHW is the high watermark a replica opens with: the checkpointed
// one clamped to [logStart, leo] (Kafka's updateHighWatermark), or the log
// start without a checkpoint.
func openingHW(ckpt int64, ok bool, logStart, leo int64) int64 {
	if !ok {
		return logStart
	}
	return min(max(ckpt, logStart), leo)
}

// openCheckpoint finds the replica's checkpointed high watermark at Open:
// the log dir's entry, else (a log dir written by an earlier version) the
// per-partition file in its directory. old reports the latter.
func (r *Replica) openCheckpoint(opts Options) (hw int64, ok, old bool) {
	if hw, ok := r.ckpts.lookup(opts.Topic, opts.Partition, opts.TopicID); ok {
		return hw, true, false
	}
	if r.ckpts.dir == opts.Dir {
		return 0, false, false
	}
	b, err := r.fs.ReadFile(filepath.Join(opts.Dir, HWCheckpointFile))
	if err != nil {
		return 0, false, false
	}
	entries, err := decodeHWCheckpoint(b)
	e, found := entries[hwKey{opts.Topic, opts.Partition}]
	if err != nil || !found || len(entries) != 1 {
		r.logger.Warn("per-partition high watermark checkpoint unreadable; opening at the log start", "err", err)
		return 0, false, true
	}
	return e.hw, true, true
}

// checkpointEntry is the replica's entry for a write, noted as the value
// it may have written (the truncation check compares with it); ok is
// false for a replica with nothing to record: no entry yet and its high
// watermark at its log start, where it opens without one (a new partition
// costs nothing until its first record is committed).
func (r *Replica) checkpointEntry() (hwEntry, bool) {
	r.ckpt.Lock()
	defer r.ckpt.Unlock()
	r.mu.Lock()
	hw := r.mu.hw
	r.mu.Unlock()
	if r.ckpt.hw < 0 && hw == r.log.LogStartOffset() {
		return hwEntry{}, false
	}
	r.ckpt.hw = hw
	return hwEntry{hw: hw, topicID: r.topicID}, true
}

// CheckpointHW writes the high watermark checkpoint now if a high
// watermark moved since the last write (tests and tools; the owner of a
// shared checkpoint uses HWCheckpoints.WriteNow). Safe for concurrent use.
func (r *Replica) CheckpointHW() error { return r.ckpts.WriteNow() }

// CheckpointedHW returns the high watermark last given to a checkpoint
// write (or read from it at Open; -1 when there was none).
func (r *Replica) CheckpointedHW() int64 {
	r.ckpt.Lock()
	defer r.ckpt.Unlock()
	return r.ckpt.hw
}

// hwCutBelowCheckpoint rewrites the checkpoint after a truncation moved the
// high watermark below the value the replica may have written: otherwise a
// crash would reopen with the old value, which may then cover records
// written after the cut that were never committed. REQUIRES: appendMu held
// (so no append moves the log end meanwhile), r.ckpt and r.mu not held.
func (r *Replica) hwCutBelowCheckpoint() {
	r.ckpt.Lock()
	r.mu.Lock()
	hw := r.mu.hw
	r.mu.Unlock()
	below := hw < r.ckpt.hw
	r.ckpt.Unlock()
	if !below {
		return
	}
	if err := r.ckpts.WriteNow(); err != nil {
		// Without a checkpoint the replicas reopen at their log start,
		// which is safe; with the old one this one might not be.
		rmErr := r.ckpts.remove()
		r.logger.Warn("high watermark checkpoint after a truncation failed; removed it", "high_watermark", hw,
			"err", err, "remove_err", rmErr)
	}
}
