// Package replica is the node's replica manager, as Kafka's ReplicaManager:
// it opens the local replicas (partition.Replica) of the partitions the
// control plane assigns to this node and closes and deletes the others,
// applies the leader and follower roles the control plane gives them, runs
// the follower fetchers that copy the leaders' logs (fetcher.go, with their
// own Fetch connection in fetch_conn.go), rebuilds a follower that is
// behind the leader's local log from the remote tail (bootstrap.go), and,
// on a leader, proposes ISR changes to the control plane (isr.go).
//
// It sits above partition/, controlplane/ (read through the narrow
// Metadata interface, which *controlplane.Store implements), tiering/ and
// infra/, and below broker/, which builds a Manager with New, starts Run
// and hands it to the protocol handlers as their partition.Leaders.
package replica
