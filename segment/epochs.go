package segment

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shale-io/shale/segment/leaderepoch"
	"github.com/shale-io/shale/segment/vfs"
)

// EpochEntry is one entry of the leader-epoch history
// (leaderepoch.Entry, the type the remote metadata uses too).
type EpochEntry = leaderepoch.Entry

// UndefinedEpoch and UndefinedEpochOffset are Kafka's answers for an epoch the
// log cannot place (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// epochCache is the leader-epoch history, ordered by epoch and start offset.
// It is a plain value: the Log guards it (see Log.mu) and persists it.
type epochCache []EpochEntry

func (c epochCache) latest() (EpochEntry, bool) {
	if len(c) == 0 {
		return EpochEntry{}, false
	}
	return c[len(c)-1], true
}

// assign records that epoch started at offset, if epoch is newer than the
// latest one; entries at or after offset are dropped first. It reports
// whether the cache changed. Older epochs are ignored, as Kafka does.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 {
		return false
	}
	if last, ok := c.latest(); ok && epoch <= last.Epoch {
		return false
	}
	c.truncateFromEnd(offset)
	*c = append(*c, EpochEntry{Epoch: epoch, StartOffset: offset})
	return true
}

// truncateFromEnd drops the entries starting at or after end (follower
// truncation to end). It reports whether the cache changed.
func (c *epochCache) truncateFromEnd(end int64) bool {
	n := len(*c)
	for n > 0 && (*c)[n-1].StartOffset >= end {
		n--
	}
	changed := n != len(*c)
	*c = (*c)[:n]
	return changed
}

// truncateFromStart drops the entries wholly before start and moves the start
// offset of the entry covering start up to start (log start moved up).
func (c *epochCache) truncateFromStart(start int64) bool {
	i := 0
	for i+1 < len(*c) && (*c)[i+1].StartOffset <= start {
		i++
	}
	changed := i > 0
	*c = append((*c)[:0], (*c)[i:]...)
	if len(*c) > 0 && (*c)[0].StartOffset < start {
		(*c)[0].StartOffset = start
		changed = true
	}
	return changed
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka's LeaderEpochFileCache
// does: for the latest epoch, the log end offset; otherwise the largest
// epoch <= requested and the start offset of the first epoch above it; an
// epoch above every known one, or an empty cache, gives undefined.
func (c epochCache) endOffsetFor(requested int32, leo int64) (int32, int64) {
	if requested < 0 {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if last, ok := c.latest(); ok && last.Epoch == requested {
		return requested, leo
	}
	hi := -1 // first entry with Epoch > requested
	for i, e := range c {
		if e.Epoch > requested {
			hi = i
			break
		}
	}
	if hi < 0 {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if hi == 0 {
		return requested, c[0].StartOffset
	}
	return c[hi-1].Epoch, c[hi].StartOffset
}

// AssignEpoch records that leader epoch starts at the log end offset, as a
// new Kafka leader does on election (Partition.makeLeader calls
// UnifiedLog.maybeAssignEpochStartOffset(leaderEpoch, logEndOffset)), before
// it has written anything in the epoch. OffsetForLeaderEpoch then places
// the new epoch, and every epoch below it, without waiting for the first
// write, and an append in the epoch adds no second entry (noteEpoch).
//
// It does nothing, and reports false, when epoch is not newer than the
// log's latest epoch (a leader re-elected in its epoch, a stale call) or is
// negative. Otherwise entries starting at or after the log end are dropped
// first (an epoch assigned earlier and never written in; an empty log's
// entry at its start, as the first append would drop it). The checkpoint
// file gets the entry later (installEpochsDeferred).
//
// An entry with no batch after it does not survive Open of a non-empty log
// (Open cuts the history at the log end, as Kafka's LogLoader does): the
// leader assigns it again when it takes its role.
func (l *Log) AssignEpoch(epoch int32) (bool, error) {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return false, ErrClosed
	}
	epochs := append(epochCache(nil), l.mu.epochs...)
	if !epochs.assign(epoch, l.mu.leo) {
		return false, nil
	}
	l.installEpochsDeferred(epochs)
	return true, nil
}

// DropUnwrittenEpochs drops the history entries that start at or after the
// log end offset: epochs with no batch in this log, such as one this
// replica assigned as leader (AssignEpoch) and lost before writing in it.
// Kafka's follower does this at every truncation, also one that cuts
// nothing (UnifiedLog.truncateTo: "Always truncate epoch cache since we may
// have a conflicting epoch entry at the end of the log from the leader"),
// so that the epoch it fetches with and asks about is one its batches
// carry. It reports whether the history changed; the checkpoint is written
// first, and on an error the history is unchanged.
func (l *Log) DropUnwrittenEpochs() (bool, error) {
	l.writer.Lock()
	defer l.writer.Unlock()
	if l.mu.closed {
		return false, ErrClosed
	}
	epochs := append(epochCache(nil), l.mu.epochs...)
	if !epochs.truncateFromEnd(l.mu.leo) {
		return false, nil
	}
	return true, l.installEpochs(epochs)
}

// installEpochs writes epochs to the checkpoint, then makes it the history.
// REQUIRES: writer lock held.
func (l *Log) installEpochs(epochs epochCache) error {
	if err := l.writeEpochs(epochs); err != nil {
		return err
	}
	l.lockState()
	l.mu.epochs = epochs
	l.mu.Unlock()
	return nil
}

// writeEpochs writes epochs, the whole history as it is or is about to be,
// to the checkpoint (temp file, fsync, rename, directory fsync): the file
// then holds every entry.
// REQUIRES: writer lock held.
func (l *Log) writeEpochs(epochs epochCache) error {
	if err := epochs.write(l.fs, l.dir); err != nil {
		return err
	}
	l.epochsUnsaved.Store(0)
	return nil
}

// encode renders Kafka's leader-epoch-checkpoint text: version 0, the count,
// then one "epoch startOffset" line per entry.
func (c epochCache) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(c))
	for _, e := range c {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

func (c epochCache) write(fs vfs.FS, dir string) error {
	return writeFileAtomic(fs, dir, epochCheckpointFile, c.encode())
}

// installEpochsDeferred makes epochs the history without writing the
// checkpoint; the file is written (and synced) before the recovery point
// passes the new entry: by flushLocked, or by the background flusher before
// it raises the recovery point past it (flushNextRolled), which otherwise
// stops below it. This is safe where the change only adds an epoch at or
// past the log end (an epoch's first batch, a leader's AssignEpoch): after
// a crash, recovery re-reads the batches from the recovery point, which is
// at or below the entry's start, and assigns their epochs again. An epoch
// assigned with no batch yet is lost that way; its leader's next process
// leads in a newer epoch (the controller fences a re-registered leader).
// Kafka since 3.7 (KAFKA-15046) writes this file without an fsync on the
// append path, whose fsync had stalled produce; Shale defers the write as
// well: a new leader of thousands of partitions, and its followers, made a
// temp file and renamed it for each partition's new epoch (a third of the
// nodes' CPU during a failover at 10,000 partitions). Truncations stay
// synchronous (installEpochs): they must never be undone by a crash.
// REQUIRES: writer lock held.
func (l *Log) installEpochsDeferred(epochs epochCache) {
	if last, ok := epochs.latest(); ok {
		if u := l.epochsUnsaved.Load(); u == 0 || last.StartOffset+1 < u {
			l.epochsUnsaved.Store(last.StartOffset + 1)
		}
	}
	l.lockState()
	l.mu.epochs = epochs
	l.mu.Unlock()
}

// unsavedEpochFrom is the start offset of the first history entry the
// checkpoint lacks; ok is false when it holds them all.
func (l *Log) unsavedEpochFrom() (offset int64, ok bool) {
	u := l.epochsUnsaved.Load()
	return u - 1, u != 0
}

// syncEpochs writes the checkpoint when the history has entries it lacks
// (installEpochsDeferred).
// REQUIRES: writer lock held.
func (l *Log) syncEpochs() error {
	if _, ok := l.unsavedEpochFrom(); !ok {
		return nil
	}
	return l.writeEpochs(l.mu.epochs)
}

// readEpochCheckpoint parses the checkpoint in dir. A missing file is an
// empty cache; a malformed one is ErrCorruption.
func readEpochCheckpoint(fs vfs.FS, dir string) (epochCache, error) {
	data, err := fs.ReadFile(filepath.Join(dir, epochCheckpointFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseEpochCheckpoint(data)
}

func parseEpochCheckpoint(data []byte) (epochCache, error) {
	bad := func(why string) (epochCache, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrCorruption, epochCheckpointFile, why)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	if v, ok := line(); !ok || v != "0" {
		return bad("version is not 0")
	}
	v, ok := line()
	if !ok {
		return bad("no count")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return bad("bad count " + strconv.Quote(v))
	}
	var c epochCache
	for i := 0; i < n; i++ {
		v, ok := line()
		if !ok {
			return bad(fmt.Sprintf("%d entries, want %d", i, n))
		}
		f := strings.Fields(v)
		if len(f) != 2 {
			return bad("bad entry " + strconv.Quote(v))
		}
		ep, err1 := strconv.ParseInt(f[0], 10, 32)
		off, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || ep < 0 || off < 0 {
			return bad("bad entry " + strconv.Quote(v))
		}
		if last, ok := c.latest(); ok && (int32(ep) <= last.Epoch || off < last.StartOffset) {
			return bad("entries out of order")
		}
		c = append(c, EpochEntry{Epoch: int32(ep), StartOffset: off})
	}
	if v, ok := line(); ok && v != "" {
		return bad("trailing data")
	}
	return c, nil
}
