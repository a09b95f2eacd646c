package controlplane

import (
	"slices"
	"testing"
)

// TestAppendLive checks the filter under Brokers, Topics,
// QuarantineEntries and ListRemoteSegments: deleted entries are left out,
// each value goes through val, and what the caller passed in stands (nil
// stays nil when nothing is live, an empty slice stays empty).
func TestAppendLive(t *testing.T) {
	m := map[string]*entry[Topic]{
		"a": {val: Topic{Name: "a", Partitions: 1}},
		"b": {val: Topic{Name: "b", Partitions: 2}, deleted: true},
		"c": {val: Topic{Name: "c", Partitions: 3}},
	}
	got := appendLive(nil, m, func(t Topic) string { return t.Name })
	slices.Sort(got)
	if want := []string{"a", "c"}; !slices.Equal(got, want) {
		t.Fatalf("appendLive = %q, want %q", got, want)
	}

	dead := map[int32]*entry[ColdTier]{1: {deleted: true}}
	if got := appendLive(nil, dead, func(c ColdTier) ColdTier { return c }); got != nil {
		t.Fatalf("appendLive of only deleted entries into nil = %v, want nil", got)
	}
	if got := appendLive(make([]ColdTier, 0, 1), dead, func(c ColdTier) ColdTier { return c }); got == nil || len(got) != 0 {
		t.Fatalf("appendLive of only deleted entries into an empty slice = %#v, want an empty, non-nil slice", got)
	}
}
