package tiering

import (
	"testing"

	"github.com/shale-io/shale/controlplane"
)

func TestIsSegmentObjectKey(t *testing.T) {
	var id controlplane.TopicID
	id[0], id[15] = 0xab, 0x01
	pp := PartitionPrefix("cluster-a", "events-v2", id, 7)
	for _, c := range []struct {
		key  string
		want bool
	}{
		{SegmentKey(pp, 1234, 5, "0123456789abcdef0123456789abcdef", KindLog), true},
		{SegmentKey(pp, 0, 0, "ff", KindManifest), true},
		{SegmentKey(pp, 0, 0, "ff", KindSnapshot), true},
		{SegmentKey(PartitionPrefix("", "events", id, 0), 0, 0, "ff", KindLog), false}, // outside the prefix
		{"cluster-a/backups/db.tar", false},
		{SegmentKey(pp, 1, 1, "ff", KindLog) + ".tmp", false},
		{"other/" + SegmentKey(pp, 1, 1, "ff", KindLog), false},
	} {
		if got := IsSegmentObjectKey("cluster-a/", c.key); got != c.want {
			t.Errorf("IsSegmentObjectKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
	if !IsSegmentObjectKey("", SegmentKey(PartitionPrefix("", "t", id, 0), 0, 0, "ff", KindIndex)) {
		t.Error("no prefix: a segment key is not recognised")
	}
}
