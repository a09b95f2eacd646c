package partition

import (
	"testing"
	"time"

	"github.com/shale-io/shale/segment"
)

func TestTieredRetentionPlan(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	old := now.UnixMilli() - 10_000
	segs := []segment.SegmentInfo{
		{BaseOffset: 0, NextOffset: 10, Size: 100, MaxTimestamp: old},
		{BaseOffset: 10, NextOffset: 20, Size: 100, MaxTimestamp: old},
		{BaseOffset: 20, NextOffset: 30, Size: 100, MaxTimestamp: now.UnixMilli()},
		{BaseOffset: 30, NextOffset: 35, Size: 50, Active: true},
	}
	for _, tc := range []struct {
		name                                     string
		localMs, localBytes, totalMs, totalBytes int64
		copied                                   int64
		want                                     int64
	}{
		{"nothing uploaded", 1000, -1, -1, -1, 0, -1},
		{"local time, all uploaded", 1000, -1, -1, -1, 30, 20},
		{"local time, first uploaded", 1000, -1, -1, -1, 10, 10},
		{"local bytes keep 150", -1, 150, -1, -1, 30, 20},
		{"local bytes, upload bounds it", -1, 0, -1, -1, 20, 20},
		{"within local retention", 100_000, -1, -1, -1, 30, -1},
		{"total retention, uploaded", 100_000, -1, 1000, -1, 30, 20},
		{"total retention, not uploaded", -1, -1, 1000, -1, 0, 20},
		{"upload ends inside a segment", 1000, -1, -1, -1, 15, 10},
	} {
		got := TieredRetentionPlan(segs, now, tc.localMs, tc.localBytes, tc.totalMs, tc.totalBytes, tc.copied)
		if got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}
