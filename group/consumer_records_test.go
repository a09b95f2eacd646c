package group

import (
	"reflect"
	"testing"
	"time"
)

func TestConsumerRecordsRoundTrip(t *testing.T) {
	id1, id2 := topicID{1, 2, 3}, topicID{9}
	inst, rack, re, asg := "i-1", "r1", "orders-.*", "range"
	a := assignment{}
	a.add(id1, 3, 1, 2)
	a.add(id2, 0)

	for _, k := range []struct {
		key  []byte
		kind recordKind
		mem  string
	}{
		{consumerKey(keyConsumerGroupMetadata, "g"), kindConsumerGroupMetadata, ""},
		{consumerKey(keyConsumerPartitionMetadata, "g"), kindConsumerPartitionMetadata, ""},
		{consumerKey(keyConsumerMemberMetadata, "g", "m"), kindConsumerMemberMetadata, "m"},
		{consumerKey(keyConsumerTargetMetadata, "g"), kindConsumerTargetMetadata, ""},
		{consumerKey(keyConsumerTargetMember, "g", "m"), kindConsumerTargetMember, "m"},
		{consumerKey(keyConsumerCurrentAssignment, "g", "m"), kindConsumerCurrentAssignment, "m"},
	} {
		got, err := decodeKey(k.key)
		if err != nil || got.kind != k.kind || got.group != "g" || got.member != k.mem {
			t.Errorf("key %x: %+v %v", k.key, got, err)
		}
	}
	if e, err := decodeConsumerEpochValue(consumerEpochValue(42)); err != nil || e != 42 {
		t.Errorf("epoch: %d %v", e, err)
	}
	subs := []subscribedTopic{{id: id1, name: "a", partitions: 3}, {id: id2, name: "b", partitions: 1}}
	if got, err := decodePartitionMetadataValue(partitionMetadataValue(subs)); err != nil || !reflect.DeepEqual(got, subs) {
		t.Errorf("partition metadata: %+v %v", got, err)
	}
	md := memberMetadata{instanceID: &inst, rackID: &rack, clientID: "c", clientHost: "/127.0.0.1:5",
		subscribedTopics: []string{"a", "b"}, subscribedRegex: &re, rebalanceTimeoutMs: 30000, serverAssignor: &asg}
	if got, err := decodeMemberMetadataValue(memberMetadataValue(md)); err != nil || !equalMetadata(got, md) {
		t.Errorf("member metadata: %+v %v", got, err)
	}
	// A classic member's metadata (tag 0, ClassicMemberMetadata).
	md.classic = &classicMetadata{sessionTimeoutMs: 10000, protocols: []protocol{{name: "cooperative-sticky", metadata: []byte{0, 3, 1}}, {name: "range"}}}
	if got, err := decodeMemberMetadataValue(memberMetadataValue(md)); err != nil || !equalMetadata(got, md) || got.classic == nil {
		t.Errorf("classic member metadata: %+v %v", got, err)
	}
	if got, err := decodeTargetMemberValue(targetMemberValue(a)); err != nil || !got.equal(a) {
		t.Errorf("target: %v %v", got, err)
	}
	ca := currentAssignment{memberEpoch: 7, previousEpoch: 6, state: memberUnrevoked, assigned: a, pendingRevoke: assignment{id2: {5}}}
	if got, err := decodeCurrentAssignmentValue(currentAssignmentValue(ca)); err != nil || got.memberEpoch != 7 ||
		got.previousEpoch != 6 || got.state != memberUnrevoked || !got.assigned.equal(a) || !got.pendingRevoke.equal(ca.pendingRevoke) {
		t.Errorf("current: %+v %v", got, err)
	}
	// A value cut short or of another version does not decode.
	v := currentAssignmentValue(ca)
	for _, bad := range [][]byte{v[:len(v)-3], append([]byte{0, 1}, v[2:]...), nil} {
		if _, err := decodeCurrentAssignmentValue(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}

// FuzzConsumerRecords: the consumer group record decoders read bytes from
// __consumer_offsets, which a client may write to; they never panic, and
// what decodes encodes back to a value that decodes the same.
func FuzzConsumerRecords(f *testing.F) {
	a := assignment{topicID{1}: {0, 1}}
	inst := "i"
	f.Add(consumerKey(keyConsumerMemberMetadata, "g", "m"), memberMetadataValue(memberMetadata{instanceID: &inst, subscribedTopics: []string{"t"}}))
	f.Add(consumerKey(keyConsumerMemberMetadata, "g", "m"), memberMetadataValue(memberMetadata{subscribedTopics: []string{"t"},
		classic: &classicMetadata{sessionTimeoutMs: 3, protocols: []protocol{{name: "range", metadata: []byte{0, 0}}}}}))
	f.Add(consumerKey(keyConsumerCurrentAssignment, "g", "m"), currentAssignmentValue(currentAssignment{assigned: a, pendingRevoke: a}))
	f.Add(consumerKey(keyConsumerTargetMember, "g", "m"), targetMemberValue(a))
	f.Add(consumerKey(keyConsumerPartitionMetadata, "g"), partitionMetadataValue([]subscribedTopic{{name: "t", partitions: 2}}))
	f.Add(consumerKey(keyConsumerGroupMetadata, "g"), consumerEpochValue(3))
	f.Add([]byte{0, 5, 0xff, 0xff}, []byte{0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		k, err := decodeKey(key)
		if err != nil || k.kind < kindConsumerGroupMetadata {
			return
		}
		lc := newLoadedConsumer()
		if err := lc.apply(k, value); err != nil {
			return
		}
		switch k.kind {
		case kindConsumerMemberMetadata:
			md := lc.members[k.member]
			again, err := decodeMemberMetadataValue(memberMetadataValue(md))
			if err != nil || !equalMetadata(again, md) {
				t.Fatalf("member metadata does not round-trip: %+v %v", md, err)
			}
		case kindConsumerCurrentAssignment:
			c := lc.current[k.member]
			again, err := decodeCurrentAssignmentValue(currentAssignmentValue(c))
			if err != nil || !again.assigned.equal(c.assigned) || !again.pendingRevoke.equal(c.pendingRevoke) {
				t.Fatalf("current assignment does not round-trip: %+v %v", c, err)
			}
		case kindConsumerTargetMember:
			tg := lc.targets[k.member]
			again, err := decodeTargetMemberValue(targetMemberValue(tg))
			if err != nil || !again.equal(tg) {
				t.Fatalf("target does not round-trip: %v %v", tg, err)
			}
		}
		lc.exists = true
		lc.restore(time.Unix(0, 0), &Config{ConsumerSessionTimeout: time.Second}, "g") // never panics either
	})
}
