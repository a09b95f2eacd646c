package partition

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shale-io/shale/segment"
)

// The high watermark checkpoint: Kafka's replication-offset-checkpoint,
// one per partition directory rather than one per log dir, so that the
// replica writes its own (temp file, fsync, rename, directory fsync:
// segment.WriteFileAtomic). It is written at most every
// Options.HWCheckpointInterval when the high watermark moved (from
// MaybeFlush, which the broker calls periodically), at once when a
// truncation takes the high watermark below the checkpointed one, and on
// Close. Open reads it back, clamped to the log's [log start, log end], as
// Kafka's log loading does: a replica reopened after a crash exposes no
// offset that was not committed, only (at worst) fewer than were.

// HWCheckpointFile is the name of the checkpoint in a partition directory.
const HWCheckpointFile = "replication-offset-checkpoint"

// DefaultHWCheckpointInterval is Kafka's replica.high.watermark.checkpoint.interval.ms.
const DefaultHWCheckpointInterval = 5 * time.Second

// encodeHWCheckpoint is Kafka's checkpoint format with this partition's one
// entry: version 0, the entry count, then "topic partition offset".
func encodeHWCheckpoint(topic string, p int32, hw int64) []byte {
	return fmt.Appendf(nil, "0\n1\n%s %d %d\n", topic, p, hw)
}

// readHWCheckpoint returns the high watermark checkpointed in dir for
// topic-p. ok is false when there is no file; an unreadable file, or one
// about another partition, is an error (the caller then starts from the log
// start, which is always safe).
func readHWCheckpoint(dir, topic string, p int32) (hw int64, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, HWCheckpointFile))
	if os.IsNotExist(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	var lines []string
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	if len(lines) != 3 || lines[0] != "0" || lines[1] != "1" {
		return 0, false, fmt.Errorf("%s: not a version 0 checkpoint of one entry: %q", HWCheckpointFile, b)
	}
	f := strings.Fields(lines[2])
	if len(f) != 3 || f[0] != topic || f[1] != strconv.Itoa(int(p)) {
		return 0, false, fmt.Errorf("%s: entry %q is not for %s-%d", HWCheckpointFile, lines[2], topic, p)
	}
	hw, err = strconv.ParseInt(f[2], 10, 64)
	if err != nil || hw < 0 {
		return 0, false, fmt.Errorf("%s: offset %q", HWCheckpointFile, f[2])
	}
	return hw, true, nil
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

// checkpointHW writes the high watermark checkpoint if the high watermark
// differs from the last one written and force is set or the last write is
// at least the interval old; never while there is no file and the high
// watermark is the log start. REQUIRES: r.ckpt held, r.mu not held.
func (r *Replica) checkpointHWLocked(force bool) error {
	r.mu.Lock()
	hw := r.mu.hw
	r.mu.Unlock()
	now := r.now()
	if hw == r.ckpt.hw || (!force && now.Sub(r.ckpt.at) < r.ckpt.interval) {
		return nil
	}
	if r.ckpt.hw < 0 && hw == r.log.LogStartOffset() {
		// Without a file a replica opens at its log start (openingHW): this
		// high watermark, or below it when a newer log start was not yet
		// made durable, which is safe. The file would say nothing more. A new partition writes none
		// until its first record is committed, so creating 10,000 idle
		// partitions costs no file, fsync or rename each (issue 23).
		return nil
	}
	if err := segment.WriteFileAtomic(r.dir, HWCheckpointFile, encodeHWCheckpoint(r.topic, r.partition, hw)); err != nil {
		return fmt.Errorf("writing the high watermark checkpoint: %w", err)
	}
	r.ckpt.hw, r.ckpt.at = hw, now
	return nil
}

// CheckpointHW writes the high watermark checkpoint now if the high
// watermark moved since the last one (Close and MaybeFlush call it; tests
// and tools may too). Safe for concurrent use.
func (r *Replica) CheckpointHW() error {
	r.ckpt.Lock()
	defer r.ckpt.Unlock()
	return r.checkpointHWLocked(true)
}

// CheckpointedHW returns the high watermark last written to the checkpoint
// (or read from it at Open; -1 when there was none).
func (r *Replica) CheckpointedHW() int64 {
	r.ckpt.Lock()
	defer r.ckpt.Unlock()
	return r.ckpt.hw
}

// hwCutBelowCheckpoint rewrites the checkpoint after a truncation moved the
// high watermark below the checkpointed one: otherwise a crash would reopen
// with the old value, which may then cover records written after the cut
// that were never committed. REQUIRES: appendMu held (so no append moves
// the log end meanwhile), r.ckpt and r.mu not held.
func (r *Replica) hwCutBelowCheckpoint() {
	r.ckpt.Lock()
	defer r.ckpt.Unlock()
	r.mu.Lock()
	hw := r.mu.hw
	r.mu.Unlock()
	if hw >= r.ckpt.hw {
		return
	}
	if err := r.checkpointHWLocked(true); err != nil {
		// Without a checkpoint the replica reopens at its log start,
		// which is safe; with the old one it might not be.
		rmErr := os.Remove(filepath.Join(r.dir, HWCheckpointFile))
		r.logger.Warn("high watermark checkpoint after a truncation failed; removed it", "high_watermark", hw,
			"err", err, "remove_err", rmErr)
		if rmErr == nil || os.IsNotExist(rmErr) {
			r.ckpt.hw = -1
		}
	}
}
