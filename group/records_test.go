package group

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRecordFormats(t *testing.T) {
	tp := topicPartition{"orders", 3}
	k, err := decodeKey(offsetKey("g", tp))
	if err != nil || k.kind != kindOffset || k.group != "g" || k.tp != tp {
		t.Fatalf("offset key: %+v %v", k, err)
	}
	// Kafka's offset commit key v1: int16 version, string group, string topic, int32 partition.
	want := []byte{0, 1, 0, 1, 'g', 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 3}
	if got := offsetKey("g", tp); !bytes.Equal(got, want) {
		t.Fatalf("offset key bytes %v, want %v", got, want)
	}
	e := offsetEntry{offset: 42, leaderEpoch: 5, metadata: "m", commitTimestamp: 1700000000000}
	v := offsetValue(e)
	if v[1] != 3 {
		t.Fatalf("offset value version %d, want 3", v[1])
	}
	if got, err := decodeOffsetValue(v); err != nil || got != e {
		t.Fatalf("offset value: %+v %v", got, err)
	}
	// With the topic's id: value v4 (flexible), the id in tagged field 0,
	// as Kafka 4.1 writes it (KAFKA-19141).
	e.topicID = [16]byte{0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xcd}
	v = offsetValue(e)
	if v[1] != 4 {
		t.Fatalf("offset value with a topic id: version %d, want 4", v[1])
	}
	// ... int64 commit timestamp, then the tag section: 1 tag, tag 0, 16 bytes, the id.
	if tail := append([]byte{1, 0, 16}, e.topicID[:]...); !bytes.HasSuffix(v, tail) {
		t.Fatalf("offset value v4 %x does not end with the tagged id %x", v, tail)
	}
	if got, err := decodeOffsetValue(v); err != nil || got != e {
		t.Fatalf("offset value v4: %+v %v", got, err)
	}
	gk, err := decodeKey(groupKey("grp"))
	if err != nil || gk.kind != kindGroup || gk.group != "grp" {
		t.Fatalf("group key: %+v %v", gk, err)
	}
	gv := kmsg.NewGroupMetadataValue()
	gv.ProtocolType, gv.Generation, gv.Protocol = "consumer", 4, kmsg.StringPtr("range")
	m := kmsg.NewGroupMetadataValueMember()
	m.MemberID, m.InstanceID, m.SessionTimeoutMillis, m.Assignment = "m1", kmsg.StringPtr("i1"), 3000, []byte{1, 2}
	gv.Members = append(gv.Members, m)
	dv, err := decodeGroupValue(groupValue(&gv))
	if err != nil || dv.Version != 3 || dv.Generation != 4 || *dv.Protocol != "range" || len(dv.Members) != 1 ||
		*dv.Members[0].InstanceID != "i1" || !bytes.Equal(dv.Members[0].Assignment, []byte{1, 2}) {
		t.Fatalf("group value: %+v %v", dv, err)
	}
	if _, err := decodeKey([]byte{0, 99, 0, 0}); err == nil {
		t.Fatal("unknown key version decoded")
	}
	// Share group keys (9-15): group, and member for 10, 13 and 14.
	if sk, err := decodeKey(consumerKey(keyShareCurrent, "sg", "m1")); err != nil || sk.kind != kindShare || sk.group != "sg" || sk.member != "m1" {
		t.Fatalf("share member key: %+v %v", sk, err)
	}
	if sk, err := decodeKey(consumerKey(11, "sg")); err != nil || sk.kind != kindShare || sk.group != "sg" {
		t.Fatalf("share group key: %+v %v", sk, err)
	}
	if _, err := decodeKey(consumerKey(keyShareMember, "sg")); err == nil {
		t.Fatal("share member key without a member decoded")
	}
}

// FuzzDecodeRecords: the __consumer_offsets decoders read bytes from disk
// (and from whoever produced to the topic); they must fail, never panic.
func FuzzDecodeRecords(f *testing.F) {
	f.Add(offsetKey("g", topicPartition{"t", 1}))
	f.Add(groupKey("g"))
	f.Add(consumerKey(keyShareCurrent, "g", "m"))
	f.Add(consumerKey(keyShareLast, "g"))
	f.Add(offsetValue(offsetEntry{offset: 1}))
	f.Add(offsetValue(offsetEntry{offset: 1, topicID: [16]byte{1}}))
	gv := kmsg.NewGroupMetadataValue()
	f.Add(groupValue(&gv))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeKey(b)
		decodeOffsetValue(b)
		decodeGroupValue(b)
	})
}
