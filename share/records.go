package share

// The __share_group_state record format is Kafka's share coordinator's
// (share-coordinator/src/main/resources/common/message):
//
//   - ShareSnapshotKey (key version 0) and ShareUpdateKey (key version 1):
//     group id (string), topic id (uuid), partition (int32); not flexible.
//   - ShareSnapshotValue v0 (flexible): snapshot epoch (uint16), state
//     epoch, leader epoch, start offset, state batches (first and last
//     offset, delivery state, delivery count).
//   - ShareUpdateValue v0 (flexible): snapshot epoch, leader epoch, start
//     offset (-1: unchanged), state batches.
//   - a null value is a tombstone: the share-partition's state was deleted
//     (DeleteShareGroupState).
//
// Shale's share coordinator writes a ShareSnapshot on every write (a full
// state, so replay needs only the last record per key) and reads both.

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrCorruptRecord is a __share_group_state record that does not decode.
var ErrCorruptRecord = errors.New("share: corrupt __share_group_state record")

// Record key versions (Kafka's record types).
const (
	snapshotKeyVersion = 0
	updateKeyVersion   = 1
)

// StateKey names one share-partition's state: Kafka's
// SharePartitionKey (group, topic id, partition).
type StateKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

func (k StateKey) String() string {
	return fmt.Sprintf("%s:%x:%d", k.Group, k.TopicID, k.Partition)
}

// StateRecord is one decoded __share_group_state record.
type StateRecord struct {
	Key           StateKey
	Update        bool // a ShareUpdate (else a ShareSnapshot)
	Tombstone     bool
	SnapshotEpoch uint16
	Snapshot      Snapshot // an update's StartOffset is -1 when unchanged
}

// EncodeStateKey returns the key of a ShareSnapshot (update false) or
// ShareUpdate record.
func EncodeStateKey(k StateKey, update bool) []byte {
	v := int16(snapshotKeyVersion)
	if update {
		v = updateKeyVersion
	}
	b := binary.BigEndian.AppendUint16(nil, uint16(v))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// EncodeSnapshotValue returns a ShareSnapshotValue v0.
func EncodeSnapshotValue(snapshotEpoch uint16, s Snapshot) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, snapshotEpoch)
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	return appendBatches(b, s.Batches)
}

// EncodeUpdateValue returns a ShareUpdateValue v0.
func EncodeUpdateValue(snapshotEpoch uint16, s Snapshot) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, snapshotEpoch)
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	return appendBatches(b, s.Batches)
}

func appendBatches(b []byte, batches []StateBatch) []byte {
	b = binary.AppendUvarint(b, uint64(len(batches))+1) // compact array
	for _, sb := range batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.First))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.Last))
		b = append(b, byte(sb.State))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0) // no tagged fields
	}
	return append(b, 0) // no tagged fields
}

// DecodeStateRecord decodes a __share_group_state record (value nil: a
// tombstone). Any other key version, or bytes that do not decode, are
// ErrCorruptRecord.
func DecodeStateRecord(key, value []byte) (StateRecord, error) {
	var rec StateRecord
	d := decoder{b: key}
	version := d.int16()
	switch version {
	case snapshotKeyVersion:
	case updateKeyVersion:
		rec.Update = true
	default:
		return rec, fmt.Errorf("%w: key version %d", ErrCorruptRecord, version)
	}
	n := d.int16()
	if n < 0 {
		return rec, fmt.Errorf("%w: null group id", ErrCorruptRecord)
	}
	rec.Key.Group = string(d.bytes(int(n)))
	copy(rec.Key.TopicID[:], d.bytes(16))
	rec.Key.Partition = d.int32()
	if d.err != nil || len(d.b) != 0 {
		return rec, fmt.Errorf("%w: key", ErrCorruptRecord)
	}
	if value == nil {
		rec.Tombstone = true
		return rec, nil
	}
	d = decoder{b: value}
	if v := d.int16(); v != 0 && d.err == nil {
		return rec, fmt.Errorf("%w: value version %d", ErrCorruptRecord, v)
	}
	rec.SnapshotEpoch = uint16(d.int16())
	if !rec.Update {
		rec.Snapshot.StateEpoch = d.int32()
	}
	rec.Snapshot.LeaderEpoch = d.int32()
	rec.Snapshot.StartOffset = d.int64()
	count := d.uvarint()
	if count == 0 || count-1 > uint64(len(d.b))/20 {
		return rec, fmt.Errorf("%w: %d state batches in %d bytes", ErrCorruptRecord, int64(count)-1, len(d.b))
	}
	for i := uint64(0); i < count-1 && d.err == nil; i++ {
		sb := StateBatch{First: d.int64(), Last: d.int64(), State: DeliveryState(d.int8()), DeliveryCount: d.int16()}
		d.skipTags()
		if sb.Last < sb.First || sb.First < 0 || (sb.State != Available && sb.State != Acknowledged && sb.State != Archived) {
			return rec, fmt.Errorf("%w: state batch %+v", ErrCorruptRecord, sb)
		}
		rec.Snapshot.Batches = append(rec.Snapshot.Batches, sb)
	}
	d.skipTags()
	if d.err != nil || len(d.b) != 0 {
		return rec, fmt.Errorf("%w: value", ErrCorruptRecord)
	}
	return rec, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil || n < 0 || n > len(d.b) {
		d.err = ErrCorruptRecord
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) int8() int8 {
	b := d.bytes(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (d *decoder) int16() int16 {
	b := d.bytes(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (d *decoder) int32() int32 {
	b := d.bytes(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (d *decoder) int64() int64 {
	b := d.bytes(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > math.MaxInt32 {
		d.err = ErrCorruptRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

// skipTags skips a tagged-field section (Shale writes none; Kafka may).
func (d *decoder) skipTags() {
	n := d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		d.uvarint() // tag
		d.bytes(int(d.uvarint()))
	}
}

// Apply applies a decoded record to the state held for its key: a
// snapshot replaces it, an update overwrites the offsets it names (and
// the start offset unless -1), a tombstone removes it. The caller owns
// states.
func Apply(states map[StateKey]*Snapshot, rec StateRecord) {
	switch {
	case rec.Tombstone:
		delete(states, rec.Key)
	case !rec.Update:
		s := rec.Snapshot
		states[rec.Key] = &s
	default:
		cur := states[rec.Key]
		if cur == nil {
			return // an update without a snapshot: nothing to apply it to
		}
		cur.LeaderEpoch = rec.Snapshot.LeaderEpoch
		if rec.Snapshot.StartOffset >= 0 {
			cur.StartOffset = rec.Snapshot.StartOffset
		}
		cur.Batches = mergeBatches(cur.Batches, rec.Snapshot.Batches, cur.StartOffset)
	}
}

// mergeBatches overlays upd on base (upd wins where they overlap) and
// drops what ends below start.
func mergeBatches(base, upd []StateBatch, start int64) []StateBatch {
	var out []StateBatch
	for _, b := range base {
		for _, u := range upd {
			if u.Last < b.First || u.First > b.Last {
				continue
			}
			if u.First > b.First {
				out = append(out, StateBatch{First: b.First, Last: u.First - 1, State: b.State, DeliveryCount: b.DeliveryCount})
			}
			b.First = u.Last + 1
			if b.First > b.Last {
				break
			}
		}
		if b.First <= b.Last {
			out = append(out, b)
		}
	}
	out = append(out, upd...)
	sortBatches(out)
	kept := out[:0]
	for _, b := range out {
		if b.Last >= start {
			b.First = max(b.First, start)
			kept = append(kept, b)
		}
	}
	return kept
}

func sortBatches(bs []StateBatch) {
	slices.SortStableFunc(bs, func(a, b StateBatch) int { return cmp.Compare(a.First, b.First) })
}
