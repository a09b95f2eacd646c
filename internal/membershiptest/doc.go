// Package membershiptest holds process-level tests of changes to the set of
// replicas of a partition (issue 15): reassignment (KIP-455), the last
// in-sync replica returning with an empty or torn disk (KIP-966's eligible
// leader replicas), and placing replicas by hand. Each test runs real
// `shale serve` child processes on 127.0.0.1 sharing one NATS server run in
// the test process, writes acks=all records with franz-go, changes the
// membership with the Kafka admin APIs or by killing nodes and damaging
// their data dirs, and ends by reading the partition back from the earliest
// offset: every acknowledged record, once, at its offset.
//
// The package has only tests. They build the shale binary once (TestMain),
// or use the one named by SHALE_E2E_BIN, like internal/replicationtest.
package membershiptest
