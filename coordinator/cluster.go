package coordinator

import "context"

// Broker is where a client finds a coordinator.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	// Listeners are its advertised listeners, NAME://host:port,... (see
	// kafka.AdvertisedAddr); a client is told the address of its own.
	Listeners string
}

// Cluster is what a coordinator needs of the control plane.
type Cluster interface {
	// EnsureTopic creates the topic unless it exists; an existing topic is
	// success. It returns once this node's replicas reflect the topic.
	EnsureTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error
	// PartitionLeader is the broker leading a partition, false when the
	// partition is unknown or has no live leader.
	PartitionLeader(topic string, p int32) (Broker, bool)
	// LiveBrokers is the number of brokers registered and alive.
	LiveBrokers() int
}

// TopicShape is the shape a coordinator needs of its internal topic:
// Kafka's partition count, replication factor and topic configs for it.
// A topic of another partition count maps keys to partitions the
// coordinator never looks at; one without compaction loses its state to
// retention.
type TopicShape struct {
	Partitions        int32
	ReplicationFactor int16
	// Configs are the topic configs the coordinator creates it with; the
	// receiver of a TopicShape owns the map.
	Configs map[string]string
}
