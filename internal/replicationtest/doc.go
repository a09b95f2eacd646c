// Package replicationtest holds process-level tests of ISR replication:
// three `shale serve` child processes on 127.0.0.1 sharing one NATS server
// run in the test process, a replication factor 3 topic with
// min.insync.replicas=2, an idempotent franz-go producer with acks=all, and
// faults injected from outside: SIGKILL and restart of partition leaders,
// SIGSTOP/SIGCONT pauses, a lost unflushed tail, a wiped data dir, and a
// leader cut from NATS (each node reaches NATS through a proxy in the test
// process) while its Kafka listener stays reachable. Each test
// ends by reading every partition back (every acknowledged record exactly
// once, in order, at its acknowledged offset) and by comparing the replicas'
// .log files batch by batch below the high watermark. Its benchmarks
// measure RF=3 acks=all produce beside RF=1 acks=1.
//
// The package has only tests. They build the shale binary once (TestMain),
// or use the one named by SHALE_E2E_BIN, like internal/e2e.
package replicationtest
