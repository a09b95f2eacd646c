package replica

import "time"

// Visits is how many partitions m's Run passes have visited.
func Visits(m *Manager) int64 { return m.visits.Load() }

// SetSweepEvery sets how long partial fetcher rounds go on without a
// sweep, until the test ends.
func SetSweepEvery(t interface{ Cleanup(func()) }, d time.Duration) {
	old := sweepEvery.Swap(int64(d))
	t.Cleanup(func() { sweepEvery.Store(old) })
}
