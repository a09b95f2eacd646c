// Package controlplane holds Shale's cluster metadata — the broker registry,
// topics, and per-partition state (replicas, leader, leader epoch, ISR) — in
// NATS JetStream key-value buckets, in the role ZooKeeper or KRaft plays for
// Kafka.
//
// A Store is one node's view of that metadata. It keeps an in-memory cache fed
// by KV watchers, so reads are local and fast, and it notifies subscribers of
// changes. Writes go to JetStream first and then update the cache from the
// write's result, so a Store always reads its own writes. Partition state
// changes are compare-and-set on KV revisions, so two writers never both win.
//
// Buckets:
//
//	shale_cluster     "cluster_id" -> the Kafka cluster id, created once
//	shale_brokers     "<node id>" -> Broker, the live session; keys expire after StoreConfig.BrokerTTL
//	shale_broker_registrations "<node id>" -> the durable registration, kept while the broker is fenced
//	shale_topics      "<topic name, '.' as '=2E'>" -> Topic
//	shale_partitions  "<topic id hex>.<partition>" -> PartitionState
//
// Partition keys carry the topic id, so a topic deleted and created again
// under the same name never sees its predecessor's partition state.
//
// controlplane sits above infra (it uses a *nats.Conn from anywhere, usually
// infra/natsembed) and below the packages that act on metadata (partition,
// ingest, fetch, group, cmd).
package controlplane
