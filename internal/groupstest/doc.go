// Package groupstest holds process-level tests of what sits on the log for
// consumer groups and compacted topics: three `shale serve` child processes
// on 127.0.0.1 sharing one NATS server run in the test process, with faults
// injected from outside (SIGKILL of the group coordinator, SIGSTOP of
// followers), and checks made with raw Kafka requests (franz-go kmsg) sent
// to one chosen broker at a time: committed offsets survive the loss of the
// coordinator's node and never go backwards.
//
// The package has only tests. They build the shale binary once (TestMain),
// or use the one named by SHALE_E2E_BIN.
package groupstest
