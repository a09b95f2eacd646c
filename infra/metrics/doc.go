// Package metrics is the one place Shale's Prometheus series are defined
// and registered. A Registry holds them: counters and histograms that the
// node's hot paths feed through small methods (Produced, Fetched,
// ObserveRequest, ISRChanged, the object-store sink, and RequestSeries,
// one API's request counter and total and stage histograms resolved once
// so that a request's observation allocates nothing), and gauges and
// counters read at scrape time from a NodeState that the node computes on
// demand. Handler serves the text exposition for /metrics.
//
// Names follow Kafka's MBeans where Kafka has the metric
// (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec becomes
// kafka_server_brokertopicmetrics_bytes_in_total; the tiered-storage names
// are those of KIP-405 and KIP-963), with Prometheus units and suffixes.
// Series Kafka has no name for start with shale_. docs/metrics.md lists
// them all.
//
// The package sits in infra: it imports infra/objstore (for ErrNotFound)
// and no other Shale package; the broker package connects it.
package metrics
