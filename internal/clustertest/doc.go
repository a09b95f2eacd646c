// Package clustertest holds process-level failover tests of the control
// plane: clusters of `shale serve` child processes on 127.0.0.1, pointed at
// NATS servers run in the test process (one server, or a 3-node cluster),
// that kill -9 controllers and partition leaders, shut NATS members down,
// and check that every partition gets a live leader again, how long that
// takes, and that no two nodes ever led one partition in the same leader
// epoch (from the "became leader" lines each node logs on stderr).
//
// The package has only tests. They build the shale binary once (TestMain),
// or use the one named by SHALE_E2E_BIN, like internal/e2e.
package clustertest
