package tiering

import (
	"reflect"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
)

// FuzzDecodeEpochs: the .epochs object of a remote segment, read from the
// bucket. Any input either fails or decodes to entries that encode and
// decode back to themselves.
func FuzzDecodeEpochs(f *testing.F) {
	f.Add(EncodeEpochs([]controlplane.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 120}}))
	f.Add(EncodeEpochs(nil))
	f.Add([]byte("0\n1\n-5 9223372036854775807\n"))
	f.Add([]byte("0\n2\n1 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := DecodeEpochs(b)
		if err != nil {
			return
		}
		again, err := DecodeEpochs(EncodeEpochs(es))
		if err != nil || !reflect.DeepEqual(again, es) {
			t.Fatalf("round trip of %v: %v, %v", es, again, err)
		}
	})
}

// FuzzDecodeManifest: a segment's manifest.json, read from the bucket. Any
// input either fails or decodes to a manifest that passes its own checks
// again once encoded.
func FuzzDecodeManifest(f *testing.F) {
	m := Manifest{Topic: "t", TopicID: "0123456789abcdef0123456789abcdef", Partition: 2, SegmentID: "s",
		BaseOffset: 100, EndOffset: 199, MaxTimestamp: 5, LeaderEpoch: 3,
		SegmentEpochs: []controlplane.EpochEntry{{Epoch: 2, StartOffset: 90}, {Epoch: 3, StartOffset: 150}},
		Objects:       map[Kind]ManifestObject{KindLog: {Key: "k.log", Size: 4096}}, CreatedAt: time.Unix(1, 0).UTC()}
	f.Add(encodeManifest(m))
	f.Add([]byte(`{"topic_id":"zz","objects":{}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			return
		}
		if m.EndOffset < m.BaseOffset {
			t.Fatalf("accepted offsets [%d, %d]", m.BaseOffset, m.EndOffset)
		}
		if _, err := DecodeManifest(encodeManifest(m)); err != nil {
			t.Fatalf("re-encoded manifest refused: %v", err)
		}
	})
}
