package admin

import (
	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/txn"
)

// LeadershipChanged passes a change of this node's role for a partition
// to the coordinator of its internal topic (__consumer_offsets to the
// group coordinator, __transaction_state to the transaction coordinator),
// which loads the partition at once when this node leads it and unloads
// it when it does not, as Kafka's coordinators do on election and
// resignation. Other topics are ignored. The node calls it from the
// replica manager's OnLeadership; it never blocks on I/O.
func (h *Handlers) LeadershipChanged(topic string, p int32) {
	switch topic {
	case group.OffsetsTopic:
		h.groups.LeadershipChanged(p)
	case txn.StateTopic:
		if h.txns != nil {
			h.txns.LeadershipChanged(p)
		}
	}
}

// LoadCoordinators starts loading every coordinator partition this node
// leads already: the roles applied before LeadershipChanged was wired.
// The node calls it once, after wiring LeadershipChanged.
func (h *Handlers) LoadCoordinators() {
	h.groups.LoadLed()
	if h.txns != nil {
		h.txns.LoadLed()
	}
}
