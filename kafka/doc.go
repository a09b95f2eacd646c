// Package kafka is the node's Kafka transport: the listener, request
// framing, per-connection ordering, the Registry of API handlers, and the
// response writer (with sendfile for zero-copy fetches).
//
// It is the bottom of the protocol stack and imports no other Shale package:
// the packages that own behaviour (ingest, fetch, group, the admin APIs)
// register a Handler per API key on a Registry, and ApiVersions is computed
// from what is registered. Metrics and logs reach the rest of the node only
// through the hooks in ServerConfig (RequestObserver, StageObserver) and the
// slog.Logger passed to NewServer. This package decodes and encodes with
// franz-go's kmsg and owns no Kafka semantics beyond ApiVersions.
//
// Per connection there are three goroutines, all owned by the Server:
//
//   - a reader that reads size-prefixed frames (bounded by
//     ServerConfig.MaxRequestBytes before any allocation), parses the request
//     header and decodes the body, and may read up to ServerConfig.ReadAhead
//     requests ahead of the handler (pipelining). On a SASL listener, until
//     the client has authenticated, it reads one request at a time (the
//     next only once the last is answered) and caps each at
//     ServerConfig.SASLMaxReceiveBytes, as Kafka does;
//   - a dispatcher that calls the handlers one request at a time, in arrival
//     order (the produce path relies on this for idempotent sequence order);
//   - a writer that writes the replies strictly in request order, calling
//     Reply.Wait or Reply.Body in that order.
//
// A connection over ServerConfig.Connections (max.connections,
// max.connections.per.ip) is closed at accept; the answer to a failed SASL
// authentication is held for ServerConfig.FailedAuthenticationDelay.
//
// Bad input (an oversized or negative size, a frame that fails to decode, an
// unknown API key) closes only the offending connection, with a log line;
// replies to the requests that came before it are still written.
package kafka
