package restore

import (
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/tiering"
)

// The decoders of bucket bytes: each returns a value or an error, never
// panics, and what it accepts encodes back to something it accepts alike.

func FuzzDecodeDescriptor(f *testing.F) {
	id := controlplane.NewTopicID()
	f.Add(EncodeDescriptor(DescriptorFor(controlplane.Topic{Name: "t", ID: id, Partitions: 3, ReplicationFactor: 3,
		Configs: map[string]string{"retention.ms": "1"}}, time.Unix(1, 0))))
	f.Add([]byte(`{"topic":"..","topic_id":"x","partitions":-1}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDescriptor(b)
		if err != nil {
			return
		}
		d2, err := DecodeDescriptor(EncodeDescriptor(d))
		if err != nil || !d2.sameTopic(d) {
			t.Fatalf("re-encoded %+v: %+v, %v", d, d2, err)
		}
	})
}

func FuzzDecodeFormatMarker(f *testing.F) {
	f.Add(EncodeFormatMarker(FormatMarker{FormatVersion: 1, WrittenBy: "shale"}))
	f.Add([]byte(`{"format_version":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeFormatMarker(b)
		if err == nil && m.FormatVersion < 1 {
			t.Fatalf("accepted version %d", m.FormatVersion)
		}
	})
}

func FuzzOffsetLog(f *testing.F) {
	f.Add(offsetsLog(f))
	f.Add([]byte{})
	f.Add(make([]byte, 61))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := NewOffsetLog()
		_ = l.Add(b) // an error or a replay, never a panic
		_ = l.Offsets("")
	})
}

func FuzzParseSegmentKey(f *testing.F) {
	id := controlplane.NewTopicID()
	f.Add("pre", "pre/"+"00000000/t-"+id.Hex()+"/0/00000000000000000000-0-ab.log")
	f.Add("", "a/b/c/d")
	f.Fuzz(func(t *testing.T, prefix, key string) {
		sp, ok := ParseSegmentKey(prefix, key)
		if !ok {
			return
		}
		if sp.Partition < 0 || sp.Topic == "" || sp.File == "" {
			t.Fatalf("accepted %q as %+v", key, sp)
		}
	})
}

// TestSegmentKeysRoundTrip: keys the uploader writes parse back to their
// topic, id and partition; keys of the metadata folder do not.
func TestSegmentKeysRoundTrip(t *testing.T) {
	id := controlplane.NewTopicID()
	for _, prefix := range []string{"", "shale", "/a/b/"} {
		for _, topic := range []string{"t", "with-dash", "a.b_c"} {
			pp := tieringPrefix(prefix, topic, id, 7)
			key := pp + "00000000000000000042-3-abcdef.manifest.json"
			sp, ok := ParseSegmentKey(prefix, key)
			if !ok || sp.Topic != topic || sp.TopicID != id || sp.Partition != 7 || sp.File != "00000000000000000042-3-abcdef.manifest.json" {
				t.Fatalf("%q: %+v %v", key, sp, ok)
			}
		}
		if _, ok := ParseSegmentKey(prefix, DescriptorKey(prefix, "t", id, time.Unix(5, 0))); ok {
			t.Fatalf("a descriptor key parsed as a segment's")
		}
		if v, ok := parseFormatMarkerKey(prefix, FormatMarkerKey(prefix, 3)); !ok || v != 3 {
			t.Fatalf("format marker key: %d %v", v, ok)
		}
		name, gotID, ok := parseDescriptorKey(prefix, DescriptorKey(prefix, "with-dash", id, time.Unix(5, 0)))
		if !ok || name != "with-dash" || gotID != id {
			t.Fatalf("descriptor key: %q %v %v", name, gotID, ok)
		}
	}
}

func tieringPrefix(prefix, topic string, id controlplane.TopicID, p int32) string {
	return tiering.PartitionPrefix(prefix, topic, id, p)
}

func FuzzDecodeForkDescriptor(f *testing.F) {
	ref := ForkReference{SegmentID: controlplane.NewSegmentID(), BaseOffset: 0, EndOffset: 9, Size: 100, ObjectEndOffset: 19,
		ObjectSize: 200, SegmentEpochs: []controlplane.EpochEntry{{Epoch: 0, StartOffset: 0}}, Objects: []string{"a/b.log"}}
	f.Add(EncodeForkDescriptor(ForkDescriptor{FormatVersion: 1, Topic: "f", TopicID: controlplane.NewTopicID().Hex(), Source: "s",
		SourceID: controlplane.NewTopicID().Hex(), Partitions: []ForkDescriptorPartition{{Partition: 0, Cut: 10, Segments: []ForkReference{ref}}}}))
	f.Add([]byte(`{"format_version":1,"topic":"f","partitions":[{"partition":-1}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeForkDescriptor(b)
		if err != nil {
			return
		}
		for _, p := range d.Partitions {
			for _, r := range p.Segments {
				rec := r.Record(controlplane.NewTopicID(), p.Partition)
				if end, size := rec.ObjectBounds(); end < rec.EndOffset || size < rec.Size || rec.EndOffset >= p.Cut {
					t.Fatalf("accepted reference %+v of partition %+v", r, p)
				}
			}
		}
		if _, err := DecodeForkDescriptor(EncodeForkDescriptor(d)); err != nil {
			t.Fatalf("re-encoded %+v: %v", d, err)
		}
	})
}
