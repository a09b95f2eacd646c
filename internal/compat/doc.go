// Package compat holds Kafka client compatibility tests: real third-party
// clients (IBM/sarama, segmentio/kafka-go, confluent-kafka-go, which
// carries librdkafka, and the kcat binary, found by internal/kcattest)
// produce to and consume from an in-process Shale node started by
// internal/testnode, their consumer groups run against it (groups_*_test.go:
// kcat -G beside franz-go members, kafka-go's Reader, sarama's
// ConsumerGroup), and their admin calls are exercised against it. The
// package has no non-test code; it sits beside the other test harnesses
// under internal/ and imports Shale only through testnode.
package compat
