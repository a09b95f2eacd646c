// Package sasl has the SASL mechanisms of Shale's Kafka listeners, as
// kafka.SASLMechanism values: PLAIN (RFC 4616) against a user list, and
// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) against salted
// credentials that a lookup function provides (the node's come from the
// control plane). Like package kafka it imports no other Shale package.
//
// The SCRAM exchange is github.com/xdg-go/scram's server conversation: the
// implementation Kafka's Go ecosystem already uses (sarama's and
// franz-go's examples, kafka-go), with stringprep (SASLprep) of names and
// passwords and constant-time proof checks.
package sasl
