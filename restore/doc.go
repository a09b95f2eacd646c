// Package restore rebuilds topics from the bucket alone (issue 29): it
// reads the bucket's layout (docs/bucket-format.md), chooses for each
// partition the chain of uploaded segments of one leader-epoch lineage,
// and recreates the topic under its old id in a cluster's control plane,
// with the remote segment records, a leader epoch above every restored
// one, and the committed offsets of its groups where __consumer_offsets
// was tiered. It also publishes what the segments do not say: the bucket
// format marker and each tiered topic's descriptor (partitions, replication
// factor, configs).
//
// It sits beside tiering: it imports controlplane, tiering (the key and
// manifest formats), partition (the producer snapshot format) and
// segment/batch; broker wires it to the admin API and cmd/shale drives it.
package restore
