package replica

// Visits is how many partitions m's Run passes have visited.
func Visits(m *Manager) int64 { return m.visits.Load() }
