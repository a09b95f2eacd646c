// Package tieringe2e runs Shale's cold tier end to end: a real node
// (internal/testnode) backed by a real S3 server (versitygw, started by
// infra/objstore/objstoretest), real Kafka clients (franz-go and
// confluent-kafka-go, which carries librdkafka) and an independent S3
// client (minio-go) that inspects the bucket. It holds the acceptance
// tests of issue 4 (upload, local deletion, cold replay, timestamp lookup,
// restart, faults, no orphans, tier status) and the cold-replay benchmarks
// that `make bench` reports. The package has no non-test code.
package tieringe2e
