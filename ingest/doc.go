// Package ingest is the produce path: the Produce and InitProducerId
// handlers, which it registers on a kafka.Registry.
//
// Produce decodes each partition's record batch, appends it to the local
// leader replica (partition.Replica.AppendLeader) and answers by acks; the
// transport (listener, framing, per-connection ordering) is package kafka.
package ingest
