package coldread

import "testing"

func TestMaxTimestampFromMetadata(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	ts, ok := f.reader.MaxTimestamp(f.topic, 0)
	// The fixture stamps record i tsBase+10*i; every segment is uploaded.
	if want := tsBase + 10*int64(records-1); !ok || ts != want {
		t.Fatalf("MaxTimestamp = %d, %v; want %d", ts, ok, want)
	}
	if ts, ok := f.reader.MaxTimestamp(f.topic, 1); ok || ts != -1 {
		t.Fatalf("a partition without remote data: %d, %v", ts, ok)
	}
}
