package coordinator

import (
	"fmt"

	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// replayReadBytes bounds one read of a partition by Replay.
const replayReadBytes = 1 << 20

// Replay reads rep's log from its log start to its log end, as a shard's
// Load replays its partition (everything up to the log end is the new
// leader's to commit, as in Kafka), and calls each with every batch,
// control batches included, in offset order. An unreadable log, or an
// error from each, ends it and is returned with topic, the partition and
// the offset read.
func Replay(rep *partition.Replica, topic string, each func(h *batch.Header, b []byte) error) error {
	l := rep.Log()
	end := l.LogEndOffset()
	for off := l.LogStartOffset(); off < end; {
		b, err := l.ReadBytes(off, replayReadBytes, end, true)
		if err != nil {
			return fmt.Errorf("reading %s-%d at %d: %w", topic, rep.Partition(), off, err)
		}
		if len(b) == 0 {
			return nil
		}
		next := off
		err = batch.Split(b, func(h *batch.Header, one []byte) error {
			next = h.NextOffset()
			return each(h, one)
		})
		if err != nil {
			return fmt.Errorf("decoding %s-%d at %d: %w", topic, rep.Partition(), off, err)
		}
		if next <= off {
			return nil
		}
		off = next
	}
	return nil
}
