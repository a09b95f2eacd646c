// Package txntest holds tests of transactions on real Shale nodes (in
// process through package broker, and `shale serve` processes), driven by
// real Kafka clients: franz-go's transactional producer and
// GroupTransactSession, and raw requests (kmsg) where a test checks what
// the coordinator answers. The package has only tests.
package txntest
