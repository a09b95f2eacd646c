// Package telemetry serves KIP-714 client telemetry: GetTelemetrySubscriptions
// tells a client which of its metrics to push and how often (from the
// client metrics subscriptions, package clientmetrics, that the control
// plane holds), and PushTelemetry receives them as OTLP metrics (protobuf,
// opentelemetry-proto metrics v1), which the node exports on its /metrics
// page labelled with the client that pushed them. No Kafka broker exposes
// pushed metrics without a plugin; here they are one scrape away.
//
// State is per node and in memory, as in Kafka's ClientMetricsManager: the
// client instances that asked this node, their last request times (for
// THROTTLING_QUOTA_EXCEEDED) and the series they pushed. It is bounded:
// at most Config.MaxClients instances, Config.MaxSeriesPerClient series per
// client and Config.MaxSeries in all; a client that stops asking and
// pushing is forgotten, series and all, after three push intervals (at
// least a minute), checked lazily on each request and scrape, so an idle
// node runs no goroutine for it.
//
// telemetry sits beside the other handler packages (admin, fetch, ...),
// over kafka (the transport), clientmetrics and segment/batch (the
// codecs); broker registers its handlers and its collector.
package telemetry
