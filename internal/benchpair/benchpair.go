// Package benchpair times two variants of one operation in the same
// benchmark loop, one operation of each in turn, so that a shared, noisy
// machine slows both alike and their ratio stays meaningful where two
// benchmarks run one after the other would not (go test -count runs each
// benchmark's counts back to back).
package benchpair

import (
	"slices"
	"testing"
	"time"
)

// Run runs fn and peer b.N times each, alternating (the order swapped at
// every step), times every operation, and reports the median time of fn
// as ns/op, of peer as peerUnit (for example "bypassed-ns/op") and the
// ratio of the two medians as "ratio". Medians, not means: an operation
// that stalls on the machine (a page-cache writeback, a descheduled
// thread) lands on one variant only and would otherwise swing the ratio.
// Both times include reading the clock once, the same for each.
func Run(b *testing.B, fn, peer func(), peerUnit string) {
	b.Helper()
	b.ReportAllocs()
	df := make([]time.Duration, 0, b.N)
	dp := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	t := time.Now()
	for i := range b.N {
		first, second := fn, peer
		if i%2 == 1 {
			first, second = peer, fn
		}
		first()
		t1 := time.Now()
		second()
		t2 := time.Now()
		if i%2 == 1 {
			dp, df = append(dp, t1.Sub(t)), append(df, t2.Sub(t1))
		} else {
			df, dp = append(df, t1.Sub(t)), append(dp, t2.Sub(t1))
		}
		t = t2
	}
	b.StopTimer()
	mf, mp := median(df), median(dp)
	if mp <= 0 {
		return
	}
	b.ReportMetric(float64(mf.Nanoseconds()), "ns/op")
	b.ReportMetric(float64(mp.Nanoseconds()), peerUnit)
	b.ReportMetric(float64(mf)/float64(mp), "ratio")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}
