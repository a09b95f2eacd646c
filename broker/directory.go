package broker

import (
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
)

// directory is partition.Directory over the control plane's cache: topic
// ids, and where a partition's leader is for a client's listener, as this
// node last saw them (Kafka's KafkaApis.getCurrentLeader reads its metadata
// cache the same way).
type directory struct{ store *controlplane.Store }

func (d directory) TopicName(id [16]byte) (string, bool) {
	t, ok := d.store.TopicByID(controlplane.TopicID(id))
	return t.Name, ok
}

func (d directory) TopicID(name string) ([16]byte, bool) {
	t, ok := d.store.Topic(name)
	return t.ID, ok
}

func (d directory) CurrentLeader(topic string, p int32, listener string) (partition.LeaderHint, bool) {
	st, ok := d.store.Partition(topic, p)
	if !ok {
		return partition.LeaderHint{}, false
	}
	h := partition.LeaderHint{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch}
	if st.Leader < 0 {
		return h, true
	}
	if ep, ok := d.NodeEndpoint(st.Leader, listener); ok {
		h.Endpoint = &ep
	}
	return h, true
}

// NodeEndpoint is where node is reached on listener, with its rack
// (fetch.ReplicaEndpoints); false when it is not registered or has no
// such listener.
func (d directory) NodeEndpoint(node int32, listener string) (partition.NodeEndpoint, bool) {
	for _, b := range d.store.Brokers() {
		if b.NodeID != node {
			continue
		}
		host, port, ok := kafka.AdvertisedAddr(b.Listeners, listener, b.Host, b.Port)
		if !ok {
			return partition.NodeEndpoint{}, false
		}
		ep := partition.NodeEndpoint{NodeID: b.NodeID, Host: host, Port: port}
		if b.Rack != "" {
			rack := b.Rack
			ep.Rack = &rack
		}
		return ep, true
	}
	return partition.NodeEndpoint{}, false
}
