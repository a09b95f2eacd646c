package group

// The __consumer_offsets records of KIP-848 consumer groups, as Kafka 4
// writes them (group-coordinator/src/main/resources/common/message):
//
//   - key 3 ConsumerGroupMetadataKey (group) -> value v0 (epoch).
//   - key 4 ConsumerGroupPartitionMetadataKey (group) -> value v0 (per
//     subscribed topic: id, name, partition count, per-partition racks).
//   - key 5 ConsumerGroupMemberMetadataKey (group, member) -> value v0
//     (instance id, rack, client id and host, subscribed names and regex,
//     rebalance timeout, server assignor, and tag 0, the classic member
//     metadata of a member that speaks the classic protocol: session
//     timeout and supported protocols).
//   - key 6 ConsumerGroupTargetAssignmentMetadataKey (group) -> value v0
//     (assignment epoch).
//   - key 7 ConsumerGroupTargetAssignmentMemberKey (group, member) ->
//     value v0 (topic id, partitions).
//   - key 8 ConsumerGroupCurrentMemberAssignmentKey (group, member) ->
//     value v0 (member epoch, previous member epoch, state, assigned
//     partitions, partitions pending revocation).
//
// Keys are non-flexible (int16 version, then int16-length strings);
// values are flexible version 0 (compact strings and arrays, tagged
// fields). A null value is a tombstone. These decoders read bytes from the
// log, which anyone allowed to produce to __consumer_offsets can write:
// they bound every length by what is left and never panic.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/shale-io/shale/coordinator"
)

// Key versions of the consumer group records.
const (
	keyConsumerGroupMetadata       = 3
	keyConsumerPartitionMetadata   = 4
	keyConsumerMemberMetadata      = 5
	keyConsumerTargetMetadata      = 6
	keyConsumerTargetMember        = 7
	keyConsumerCurrentAssignment   = 8
	kindConsumerGroupMetadata      = recordKind(10 + keyConsumerGroupMetadata)
	kindConsumerPartitionMetadata  = recordKind(10 + keyConsumerPartitionMetadata)
	kindConsumerMemberMetadata     = recordKind(10 + keyConsumerMemberMetadata)
	kindConsumerTargetMetadata     = recordKind(10 + keyConsumerTargetMetadata)
	kindConsumerTargetMember       = recordKind(10 + keyConsumerTargetMember)
	kindConsumerCurrentAssignment  = recordKind(10 + keyConsumerCurrentAssignment)
	maxConsumerRecordArrayElements = 1 << 20
)

// consumerKey encodes a consumer group record key: version, group and,
// for the member records, the member id.
func consumerKey(version int16, group string, member ...string) []byte {
	b := kbin.AppendInt16(nil, version)
	b = kbin.AppendString(b, group)
	for _, m := range member {
		b = kbin.AppendString(b, m)
	}
	return b
}

// decodeConsumerKey decodes the keys of versions 3-8 (b[0:2] is the
// version, already checked by decodeKey).
func decodeConsumerKey(version int16, b []byte) (decodedKey, error) {
	r := kbin.Reader{Src: b[2:]}
	k := decodedKey{kind: recordKind(10 + version), group: r.String()}
	switch version {
	case keyConsumerMemberMetadata, keyConsumerTargetMember, keyConsumerCurrentAssignment:
		k.member = r.String()
	}
	if err := r.Complete(); err != nil {
		return decodedKey{}, fmt.Errorf("%w: consumer group key v%d: %v", ErrCorruptRecord, version, err)
	}
	return k, nil
}

// valueReader reads a flexible version 0 value.
type valueReader struct{ coordinator.RecordReader }

func newValueReader(b []byte) (*valueReader, error) {
	r := &valueReader{coordinator.RecordReader{Reader: kbin.Reader{Src: b}, MaxArray: maxConsumerRecordArrayElements}}
	if v := r.Int16(); !r.Ok() || v != 0 {
		return nil, fmt.Errorf("%w: consumer group value version %d (%d bytes)", ErrCorruptRecord, v, len(b))
	}
	return r, nil
}

func (r *valueReader) done(what string) error {
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: %s value: %v", ErrCorruptRecord, what, err)
	}
	return nil
}

func appendTopicPartitions(b []byte, a assignment) []byte {
	ids := a.topicIDs()
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactArrayLen(b, len(a[id]))
		for _, p := range a[id] {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0) // the struct's tags
	}
	return b
}

func (r *valueReader) topicPartitions() assignment {
	n := r.ArrayLen()
	a := assignment{}
	for range n {
		id := r.Uuid()
		ps := r.Int32s()
		r.SkipTags()
		if r.Ok() && len(ps) > 0 {
			a.add(id, ps...)
		}
	}
	return a
}

// consumerEpochValue encodes ConsumerGroupMetadataValue and
// ConsumerGroupTargetAssignmentMetadataValue: one int32.
func consumerEpochValue(epoch int32) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, epoch)
	return kbin.AppendUvarint(b, 0)
}

func decodeConsumerEpochValue(b []byte) (int32, error) {
	r, err := newValueReader(b)
	if err != nil {
		return 0, err
	}
	e := r.Int32()
	return e, r.done("consumer group epoch")
}

// subscribedTopic is one topic of a group's subscription metadata.
type subscribedTopic struct {
	id         topicID
	name       string
	partitions int32
}

func partitionMetadataValue(topics []subscribedTopic) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactArrayLen(b, len(topics))
	for _, t := range topics {
		b = kbin.AppendUuid(b, t.id)
		b = kbin.AppendCompactString(b, t.name)
		b = kbin.AppendInt32(b, t.partitions)
		b = kbin.AppendCompactArrayLen(b, 0) // racks: deprecated after 4.0
		b = kbin.AppendUvarint(b, 0)
	}
	return kbin.AppendUvarint(b, 0)
}

func decodePartitionMetadataValue(b []byte) ([]subscribedTopic, error) {
	r, err := newValueReader(b)
	if err != nil {
		return nil, err
	}
	n := r.ArrayLen()
	var out []subscribedTopic
	for range n {
		t := subscribedTopic{id: r.Uuid(), name: r.CompactString(), partitions: r.Int32()}
		for range r.ArrayLen() {
			r.Int32()
			r.Strings()
			r.SkipTags()
		}
		r.SkipTags()
		out = append(out, t)
	}
	return out, r.done("consumer group partition metadata")
}

// memberMetadata is what ConsumerGroupMemberMetadataValue holds.
type memberMetadata struct {
	instanceID         *string
	rackID             *string
	clientID           string
	clientHost         string
	subscribedTopics   []string
	subscribedRegex    *string
	rebalanceTimeoutMs int32
	serverAssignor     *string
	classic            *classicMetadata // tag 0, nil for a consumer-protocol member
}

// maxClassicProtocols bounds the protocols of a decoded classic member.
const maxClassicProtocols = 64

// appendClassicMetadata appends ClassicMemberMetadata as Kafka writes a
// nullable struct: a presence byte 1, then the struct.
func appendClassicMetadata(b []byte, c *classicMetadata) []byte {
	b = append(b, 1)
	b = kbin.AppendInt32(b, c.sessionTimeoutMs)
	b = kbin.AppendCompactArrayLen(b, len(c.protocols))
	for _, p := range c.protocols {
		b = kbin.AppendCompactString(b, p.name)
		b = kbin.AppendCompactBytes(b, p.metadata)
		b = kbin.AppendUvarint(b, 0)
	}
	return kbin.AppendUvarint(b, 0)
}

func decodeClassicMetadata(b []byte) (*classicMetadata, error) {
	r := &valueReader{coordinator.RecordReader{Reader: kbin.Reader{Src: b}, MaxArray: maxConsumerRecordArrayElements}}
	if present := r.Int8(); present < 0 {
		return nil, r.Complete()
	}
	c := &classicMetadata{sessionTimeoutMs: r.Int32()}
	n := r.ArrayLen()
	if n > maxClassicProtocols {
		return nil, fmt.Errorf("%w: %d classic protocols", ErrCorruptRecord, n)
	}
	for range n {
		c.protocols = append(c.protocols, protocol{name: r.CompactString(), metadata: slices.Clone(r.CompactBytes())})
		r.SkipTags()
	}
	r.SkipTags()
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%w: classic member metadata: %v", ErrCorruptRecord, err)
	}
	return c, nil
}

func memberMetadataValue(m memberMetadata) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, m.instanceID)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.subscribedTopics))
	for _, t := range m.subscribedTopics {
		b = kbin.AppendCompactString(b, t)
	}
	b = kbin.AppendCompactNullableString(b, m.subscribedRegex)
	b = kbin.AppendInt32(b, m.rebalanceTimeoutMs)
	b = kbin.AppendCompactNullableString(b, m.serverAssignor)
	if m.classic == nil {
		return kbin.AppendUvarint(b, 0)
	}
	c := appendClassicMetadata(nil, m.classic)
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0
	b = kbin.AppendUvarint(b, uint32(len(c)))
	return append(b, c...)
}

func decodeMemberMetadataValue(b []byte) (memberMetadata, error) {
	r, err := newValueReader(b)
	if err != nil {
		return memberMetadata{}, err
	}
	m := memberMetadata{instanceID: r.CompactNullableString(), rackID: r.CompactNullableString(),
		clientID: r.CompactString(), clientHost: r.CompactString(), subscribedTopics: r.Strings(),
		subscribedRegex: r.CompactNullableString(), rebalanceTimeoutMs: r.Int32(), serverAssignor: r.CompactNullableString()}
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		tag, size := r.Uvarint(), r.Uvarint()
		field := r.Span(int(size))
		if tag == 0 && r.Ok() {
			c, err := decodeClassicMetadata(field)
			if err != nil {
				return memberMetadata{}, err
			}
			m.classic = c
		}
	}
	if err := r.Complete(); err != nil {
		return memberMetadata{}, fmt.Errorf("%w: consumer group member metadata value: %v", ErrCorruptRecord, err)
	}
	return m, nil
}

func targetMemberValue(a assignment) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = appendTopicPartitions(b, a)
	return kbin.AppendUvarint(b, 0)
}

func decodeTargetMemberValue(b []byte) (assignment, error) {
	r, err := newValueReader(b)
	if err != nil {
		return nil, err
	}
	a := r.topicPartitions()
	return a, r.done("consumer group target assignment member")
}

// currentAssignment is what ConsumerGroupCurrentMemberAssignmentValue
// holds.
type currentAssignment struct {
	memberEpoch, previousEpoch int32
	state                      memberState
	assigned, pendingRevoke    assignment
}

func currentAssignmentValue(c currentAssignment) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, c.memberEpoch)
	b = kbin.AppendInt32(b, c.previousEpoch)
	b = kbin.AppendInt8(b, int8(c.state))
	b = appendTopicPartitions(b, c.assigned)
	b = appendTopicPartitions(b, c.pendingRevoke)
	return kbin.AppendUvarint(b, 0)
}

func decodeCurrentAssignmentValue(b []byte) (currentAssignment, error) {
	r, err := newValueReader(b)
	if err != nil {
		return currentAssignment{}, err
	}
	c := currentAssignment{memberEpoch: r.Int32(), previousEpoch: r.Int32(), state: memberState(r.Int8())}
	c.assigned = r.topicPartitions()
	c.pendingRevoke = r.topicPartitions()
	if !slices.Contains([]memberState{memberStable, memberUnrevoked, memberUnreleased, memberUnknown}, c.state) {
		return currentAssignment{}, fmt.Errorf("%w: consumer member state %d", ErrCorruptRecord, c.state)
	}
	return c, r.done("consumer group current member assignment")
}
