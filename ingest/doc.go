// Package ingest is the broker's Kafka front door: the listener, request
// framing, per-connection ordering and dispatch to the handlers that other
// packages register.
//
// It sits above the packages that own behaviour (partition, fetch, group,
// controlplane) only through the Registry: those packages, or cmd/, call
// Registry.Register with a Handler per API key, and ApiVersions is computed
// from what is registered. This package decodes and encodes with franz-go's
// kmsg and owns no Kafka semantics beyond ApiVersions.
//
// Per connection there are three goroutines, all owned by the Server:
//
//   - a reader that reads size-prefixed frames (bounded by
//     ServerConfig.MaxRequestBytes before any allocation), parses the request
//     header and decodes the body, and may read up to ServerConfig.ReadAhead
//     requests ahead of the handler (pipelining);
//   - a dispatcher that calls the handlers one request at a time, in arrival
//     order (the produce path relies on this for idempotent sequence order);
//   - a writer that writes the replies strictly in request order, calling
//     Reply.Wait or Reply.Body in that order.
//
// Bad input (an oversized or negative size, a frame that fails to decode, an
// unknown API key) closes only the offending connection, with a log line;
// replies to the requests that came before it are still written.
package ingest
