package share

// The share groups' metrics: the share groups this node coordinates by
// state and their rebalances (Kafka's GroupCoordinatorMetrics group-count
// with protocol=share, and rebalance-count), and per share-partition this
// node leads its in-flight records and lag (Kafka 4.1's SharePartition
// InFlightMessageCount, KIP-1103; the lag DescribeShareGroupOffsets
// answers, KIP-1226).

import (
	"cmp"
	"slices"
)

// Figures are the share coordinator's metrics at one moment.
type Figures struct {
	// Groups counts the share groups this node coordinates by state
	// (Empty, Stable).
	Groups map[string]int
	// Rebalances counts the new group epochs of groups with members since
	// the node started: each is a new assignment.
	Rebalances int64
}

// Figures returns the coordinator's metrics. Safe for concurrent use.
func (c *Coordinator) Figures() Figures {
	f := Figures{Groups: map[string]int{"Empty": 0, "Stable": 0}, Rebalances: c.rebalances.Load()}
	for _, g := range c.Groups() {
		f.Groups[g.State]++
	}
	return f
}

// PartitionFigures is one share-partition's position, for the metrics.
type PartitionFigures struct {
	Group     string
	Topic     string
	Partition int32
	// InFlight counts the records the share-partition tracks above its
	// start offset: Acquired, Available again (released, or lock
	// expired) and Acknowledged or Archived ones the start offset has not
	// passed yet. Acquired is those held by a member now.
	InFlight, Acquired int
	// Lag counts the records at or above the start offset, below the
	// high watermark (the last stable offset for a read_committed
	// group), not acknowledged or archived.
	Lag int64
}

// Figures returns every share-partition this node holds, sorted by group,
// topic and partition. Safe for concurrent use.
func (m *Manager) Figures() []PartitionFigures {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]PartitionFigures, 0, len(m.mu.parts))
	for k, sp := range m.mu.parts {
		f := PartitionFigures{Group: k.group, Topic: k.topic, Partition: k.partition}
		acquired, available, done := sp.st.Counts()
		f.InFlight, f.Acquired = acquired+available+done, acquired
		if rep, err := m.leaders.Leader(k.topic, k.partition); err == nil {
			f.Lag = m.lag(k.group, rep, sp.st)
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b PartitionFigures) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
