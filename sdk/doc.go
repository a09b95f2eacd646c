// Package sdk is Shale's Go SDK for applications: a Producer, a Consumer
// (with Replay of a bounded range of history, served by the cold tier when
// it is older than the local disks), and an Admin client for topics, groups
// and the tier status.
//
// It sits on top of franz-go's kgo and kadm and speaks only the Kafka
// protocol (and, for TierStatus and ReplicationStatus, the node's admin
// HTTP endpoint, whose JSON types it takes from adminapi), so it imports no
// other Shale package but adminapi (standard library only) and works
// against any Shale node. Records are kgo records (Record is an alias), and
// every type offers its kgo client for what the SDK does not wrap.
//
// Constructors take functional options (WithSeeds, WithLinger, WithGroup,
// ...); WithTLS and WithSASL reach SSL and SASL listeners, and
// ClientConfig makes them from Kafka's client properties. Producer, Consumer and Admin are safe for concurrent use unless a
// method says otherwise; Close is idempotent.
package sdk
