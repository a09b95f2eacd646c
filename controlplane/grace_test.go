package controlplane

import (
	"slices"
	"testing"
	"time"
)

func TestSessionGrace(t *testing.T) {
	const gap, session = 2 * time.Second, 6 * time.Second
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		at      time.Duration
		ok      bool
		live    []int32
		granted []int32
	}
	for _, c := range []struct {
		name   string
		steps  []step
		graced map[time.Duration][]int32 // at -> brokers graced then (of 1..4)
	}{
		{"round trips succeed: no grace", []step{
			{0, true, []int32{1, 2, 3}, nil},
			{time.Second, true, []int32{1, 2, 3}, nil},
			{5 * time.Second, true, []int32{1, 2}, nil}, // slow, but nothing failed
		}, map[time.Duration][]int32{6 * time.Second: nil}},
		{"a failure shorter than the gap: no grace", []step{
			{0, true, []int32{1, 2, 3}, nil},
			{time.Second, false, nil, nil},
			{1500 * time.Millisecond, true, []int32{1, 2}, nil},
		}, map[time.Duration][]int32{2 * time.Second: nil}},
		{"while round trips fail, the brokers live at the last success stay live", []step{
			{0, true, []int32{1, 2, 3}, nil},
			{time.Second, false, nil, nil},
		}, map[time.Duration][]int32{time.Second: {1, 2, 3}, time.Hour: {1, 2, 3}}},
		{"the control plane away for 30 s: everyone live before it is graced", []step{
			{0, true, []int32{1, 2, 3}, nil},
			{time.Second, false, nil, nil},
			{20 * time.Second, false, nil, nil},
			{30 * time.Second, true, nil, []int32{1, 2, 3}}, // every key expired meanwhile
			{31 * time.Second, true, []int32{1, 2}, nil},    // 3 does not come back
		}, map[time.Duration][]int32{
			30 * time.Second: {1, 2, 3},
			35 * time.Second: {1, 2, 3},
			36 * time.Second: nil, // the grace is over: 3 is dead
		}},
		{"a second gap within the grace keeps the graced", []step{
			{0, true, []int32{1, 2}, nil},
			{time.Second, false, nil, nil},
			{10 * time.Second, true, nil, []int32{1, 2}},
			{11 * time.Second, false, nil, nil},
			{14 * time.Second, true, []int32{1}, []int32{1, 2}},
		}, map[time.Duration][]int32{19 * time.Second: {1, 2}, 21 * time.Second: nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var g sessionGrace
			for i, s := range c.steps {
				got := g.observe(at(s.at), at(s.at), s.ok, s.live, gap, session)
				if !slices.Equal(got, s.granted) {
					t.Fatalf("step %d at %v: granted %v, want %v", i, s.at, got, s.granted)
				}
			}
			for d, want := range c.graced {
				if got := g.grantedIDs(at(d)); !slices.Equal(got, want) {
					t.Errorf("at %v: graced %v, want %v", d, got, want)
				}
				for id := int32(1); id <= 4; id++ {
					if g.graced(at(d), id) != slices.Contains(want, id) {
						t.Errorf("at %v: graced(%d) = %v", d, id, !slices.Contains(want, id))
					}
				}
			}
		})
	}
	t.Run("revoke", func(t *testing.T) {
		var g sessionGrace
		g.observe(at(0), at(0), true, []int32{1, 2}, gap, session)
		g.observe(at(time.Second), at(time.Second), false, nil, gap, session)
		g.observe(at(10*time.Second), at(10*time.Second), true, nil, gap, session)
		g.revoke(2)
		if got := g.grantedIDs(at(11 * time.Second)); !slices.Equal(got, []int32{1}) {
			t.Fatalf("after revoking 2: %v", got)
		}
	})
}
