package restore

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/segment/batch"
)

// OffsetsTopic is the group coordinator's topic, whose uploaded segments
// hold the groups' committed offsets when it is tiered.
const OffsetsTopic = "__consumer_offsets"

// GroupOffset is one committed offset of a group, as the uploaded
// segments of __consumer_offsets last recorded it.
type GroupOffset struct {
	Group       string `json:"group"`
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata,omitempty"`
}

type offsetKey struct {
	group, topic string
	partition    int32
}

// OffsetLog replays __consumer_offsets record batches (one partition's
// .log objects, in offset order) into the committed offsets they leave:
// a commit replaces the key's offset, a tombstone deletes it, and the
// commits of a transaction (TxnOffsetCommit) count once its COMMIT marker
// is read and never after an ABORT. Other records (group metadata, the
// KIP-848 records) are skipped. Not safe for concurrent use.
type OffsetLog struct {
	offsets map[offsetKey]GroupOffset
	pending map[int64][]pendingCommit // by producer id
}

type pendingCommit struct {
	key offsetKey
	val *GroupOffset // nil: a tombstone
}

// NewOffsetLog returns an empty replay.
func NewOffsetLog() *OffsetLog {
	return &OffsetLog{offsets: map[offsetKey]GroupOffset{}, pending: map[int64][]pendingCommit{}}
}

// maxDecompressed bounds one batch's records decompressed.
const maxDecompressed = 64 << 20

// ErrBadOffsetsLog: a __consumer_offsets object that is not record batches.
var ErrBadOffsetsLog = errors.New("restore: bad __consumer_offsets segment")

// Add replays the record batches of one segment's .log object. A batch
// that fails its CRC or does not parse is an error wrapping
// ErrBadOffsetsLog (the replay keeps what came before it); a record whose
// key is not an offset commit's is skipped.
func (l *OffsetLog) Add(data []byte) error {
	return batch.Split(data, func(h *batch.Header, b []byte) error {
		if err := batch.VerifyCRC(b); err != nil {
			return fmt.Errorf("%w: batch at %d: %w", ErrBadOffsetsLog, h.BaseOffset, err)
		}
		if h.Control() {
			m, ok, err := batch.ParseEndTxnMarker(b)
			if err != nil {
				return fmt.Errorf("%w: marker at %d: %w", ErrBadOffsetsLog, h.BaseOffset, err)
			}
			if ok {
				if m.Commit {
					for _, c := range l.pending[h.ProducerID] {
						l.apply(c)
					}
				}
				delete(l.pending, h.ProducerID)
			}
			return nil
		}
		recs, err := batch.Records(b, maxDecompressed)
		if err != nil {
			return fmt.Errorf("%w: batch at %d: %w", ErrBadOffsetsLog, h.BaseOffset, err)
		}
		for _, r := range recs {
			c, ok := decodeCommit(r.Key, r.Value)
			if !ok {
				continue
			}
			if h.Transactional() {
				l.pending[h.ProducerID] = append(l.pending[h.ProducerID], c)
				continue
			}
			l.apply(c)
		}
		return nil
	})
}

func (l *OffsetLog) apply(c pendingCommit) {
	if c.val == nil {
		delete(l.offsets, c.key)
		return
	}
	l.offsets[c.key] = *c.val
}

// decodeCommit decodes an offset commit record (key versions 0 and 1);
// false for any other record or one that does not parse.
func decodeCommit(key, value []byte) (pendingCommit, bool) {
	if len(key) < 2 || key[0] != 0 || key[1] > 1 {
		return pendingCommit{}, false
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return pendingCommit{}, false
	}
	c := pendingCommit{key: offsetKey{k.Group, k.Topic, k.Partition}}
	if value == nil {
		return c, true
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return pendingCommit{}, false
	}
	g := GroupOffset{Group: k.Group, Topic: k.Topic, Partition: k.Partition, Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata}
	if v.Version >= 3 {
		g.LeaderEpoch = v.LeaderEpoch
	}
	c.val = &g
	return c, true
}

// Offsets returns the committed offsets of topic (every topic when topic
// is ""), sorted by group, topic and partition.
func (l *OffsetLog) Offsets(topic string) []GroupOffset {
	var out []GroupOffset
	for k, g := range l.offsets {
		if topic == "" || k.topic == topic {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b GroupOffset) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
