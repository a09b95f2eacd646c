// Package coordinator is what Kafka's coordinators share, below the group
// coordinator (package group) and the transaction coordinator (package
// txn), which are siblings and never import each other: the key-to-
// partition hash of their internal topics (PartitionFor, Java's
// String.hashCode), the names of those topics and the view of the cluster
// a coordinator needs (Cluster, Broker, TopicShape).
//
// It sits above partition (the replicas of the internal topics) and below
// the coordinators; it knows no Kafka API.
package coordinator
