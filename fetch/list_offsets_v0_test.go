package fetch

import (
	"slices"
	"testing"
)

// TestOffsetsBefore holds v0's choice to Kafka 3.x's
// legacyFetchOffsetsBefore and its high-watermark clamp for consumers.
func TestOffsetsBefore(t *testing.T) {
	points := []offsetTime{{0, 100}, {10, 200}, {20, 300}, {25, 400}} // the last: the log end, now
	for _, c := range []struct {
		ts   int64
		max  int32
		hw   int64
		want []int64
	}{
		{-1, 1, 25, []int64{25}},
		{-1, 10, 25, []int64{25, 20, 10, 0}},
		{-1, 2, 25, []int64{25, 20}},
		{-1, 10, 22, []int64{22, 20, 10, 0}}, // LEO above HW: the HW instead
		{-1, 1, 5, []int64{5}},               // all above HW but the first base
		{250, 10, 25, []int64{10, 0}},
		{200, 10, 25, []int64{10, 0}}, // at the time: included
		{99, 10, 25, []int64{}},
		{-1, 0, 25, []int64{}},
		{-1, -3, 25, []int64{}},
	} {
		got := clampToHW(offsetsBefore(points, c.ts, c.max), c.hw)
		if !slices.Equal(got, c.want) {
			t.Errorf("timestamp %d max %d hw %d: %v, want %v", c.ts, c.max, c.hw, got, c.want)
		}
	}
	if got := offsetsBefore(nil, -1, 5); len(got) != 0 {
		t.Errorf("no segments: %v", got)
	}
}
