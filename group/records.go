package group

// The __consumer_offsets record formats are Kafka's own (kmsg's
// OffsetCommitKey/Value and GroupMetadataKey/Value):
//
//   - key versions 0 and 1: an offset commit key (group, topic, partition);
//     this coordinator writes version 1.
//   - key version 2: a group metadata key (group).
//   - offset commit values: versions 0-4 are read; version 4 is written
//     when the topic's id is known (offset, leader epoch, metadata, commit
//     timestamp, and the topic id in tagged field 0, as Kafka 4.1 writes it:
//     KAFKA-19141), version 3 otherwise. A value without the id (older
//     versions, written by an older Shale or Kafka) is an offset of the
//     topic by that name, whatever its id.
//   - group metadata values: versions 0-4 are read; version 3 is written
//     (protocol type, generation, protocol, leader, state timestamp,
//     members with instance ids, timeouts, subscription and assignment).
//   - a null value is a tombstone: the offset, or the group, is deleted.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetEntry is one committed offset.
type offsetEntry struct {
	offset          int64
	leaderEpoch     int32
	metadata        string
	commitTimestamp int64 // unix millis
	// topicID is the id of the topic the offset was committed for; zero
	// when unknown (a value written without it). An offset is the
	// current topic's only while its id is zero or the topic's.
	topicID topicID
	// logOffset orders entries of one partition by where they were
	// appended to __consumer_offsets (the record's offset at load, the
	// batch's last offset for a commit); it is not written.
	logOffset int64
}

// topicPartition names a partition of a user topic.
type topicPartition struct {
	topic     string
	partition int32
}

func offsetKey(group string, tp topicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, tp.topic, tp.partition
	return k.AppendTo(nil)
}

func offsetValue(e offsetEntry) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = 3
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = e.offset, e.leaderEpoch, e.metadata, e.commitTimestamp
	if e.topicID != (topicID{}) {
		v.Version, v.TopicID = 4, e.topicID
	}
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	return k.AppendTo(nil)
}

// groupValue encodes g's metadata, as a value version 3.
func groupValue(v *kmsg.GroupMetadataValue) []byte {
	v.Version = 3
	return v.AppendTo(nil)
}

// recordKind says what a __consumer_offsets key names.
type recordKind int

const (
	kindOffset recordKind = iota + 1
	kindGroup
)

// decodedKey is a decoded __consumer_offsets key.
type decodedKey struct {
	kind   recordKind
	group  string
	tp     topicPartition // kindOffset only
	member string         // the consumer group member records only
}

// decodeKey decodes a record key; ErrCorruptRecord for anything else (an
// unknown key version included: a newer Kafka's record types are not ours).
func decodeKey(b []byte) (decodedKey, error) {
	if len(b) < 2 {
		return decodedKey{}, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(b))
	}
	switch version := int16(b[0])<<8 | int16(b[1]); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(b); err != nil {
			return decodedKey{}, fmt.Errorf("%w: offset key: %v", ErrCorruptRecord, err)
		}
		return decodedKey{kind: kindOffset, group: k.Group, tp: topicPartition{k.Topic, k.Partition}}, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(b); err != nil {
			return decodedKey{}, fmt.Errorf("%w: group key: %v", ErrCorruptRecord, err)
		}
		return decodedKey{kind: kindGroup, group: k.Group}, nil
	case keyShareFirst, keyShareMember, keyShareFirst + 2, keyShareFirst + 3, keyShareTarget, keyShareCurrent, keyShareLast:
		return decodeShareKey(version, b)
	case keyConsumerGroupMetadata, keyConsumerPartitionMetadata, keyConsumerMemberMetadata,
		keyConsumerTargetMetadata, keyConsumerTargetMember, keyConsumerCurrentAssignment:
		return decodeConsumerKey(version, b)
	default:
		return decodedKey{}, fmt.Errorf("%w: key version %d", ErrCorruptRecord, version)
	}
}

// decodeOffsetValue decodes a non-null offset commit value.
func decodeOffsetValue(b []byte) (offsetEntry, error) {
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(b); err != nil {
		return offsetEntry{}, fmt.Errorf("%w: offset value: %v", ErrCorruptRecord, err)
	}
	e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTimestamp: v.CommitTimestamp}
	if v.Version >= 3 {
		e.leaderEpoch = v.LeaderEpoch
	}
	if v.Version >= 4 {
		e.topicID = v.TopicID
	}
	return e, nil
}

// decodeGroupValue decodes a non-null group metadata value. The result
// owns its byte slices (kmsg copies on the safe read).
func decodeGroupValue(b []byte) (*kmsg.GroupMetadataValue, error) {
	v := new(kmsg.GroupMetadataValue)
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: group value: %v", ErrCorruptRecord, err)
	}
	return v, nil
}
