// Package e2e holds process-level tests of the shale binary: TestMain builds
// cmd/shale once, and each test runs it as a child process on 127.0.0.1
// with free ports and a temporary data dir, then drives it with franz-go
// and with raw TCP. The tests cover crash recovery under SIGKILL while an
// idempotent producer streams, graceful SIGTERM, bad input on the Kafka
// port, the precedence of config sources, and the README quickstart.
//
// The package has no non-test code; it sits above everything else and
// imports no Shale package, so it sees the node only as an operator does.
package e2e
