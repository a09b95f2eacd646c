package controlplane

import (
	"testing"
	"time"
)

// FuzzDecodeQuarantine: any value read from the KV bucket decodes to an
// entry or fails without panicking, and a decoded entry survives its
// encoding.
func FuzzDecodeQuarantine(f *testing.F) {
	id := TopicID{1, 2, 3}
	seg := RemoteSegment{TopicID: id, Partition: 2, SegmentID: "abc", BaseOffset: 10, EndOffset: 20, State: CopyFinished,
		Objects: []string{"a/b.log"}, SegmentEpochs: []EpochEntry{{Epoch: 1, StartOffset: 10}}}
	e := QuarantineEntry{Topic: "t", TopicID: id, Partition: 2, ID: "abc", Reason: ReasonRetention, State: Quarantined,
		Segment: &seg, Objects: seg.Objects, QuarantinedAt: time.Unix(100, 0), PurgeAfter: time.Unix(200, 0)}
	f.Add(encodeQuarantine(e))
	f.Add([]byte(`{"topic_id":"00","state":"purging"}`))
	f.Add([]byte(`{"topic_id":"01020300000000000000000000000000","state":"restoring","segment":{"state":"x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeQuarantine(b, 1)
		if err != nil {
			return
		}
		again, err := decodeQuarantine(encodeQuarantine(got), 1)
		if err != nil || again.ID != got.ID || again.State != got.State || (again.Segment == nil) != (got.Segment == nil) {
			t.Fatalf("round trip: %+v -> %+v, %v", got, again, err)
		}
	})
}
