// Package adminapi is the JSON of a Shale node's admin HTTP endpoints, one
// definition for the server (broker), the Go SDK (sdk) and the CLI
// (cmd/shale): the paths, the body types exactly as they are on the wire,
// and a Client that GETs a path from a node and decodes its body.
//
// The package imports only the standard library, so that a client program
// can use it without pulling in the server. Its types are the wire format:
// changing a field name, a json tag or an omitempty changes what every
// deployed node sends and every client reads.
//
// Conventions: offsets and node ids are -1 when unknown or absent, and
// "ms ago" durations are -1 for never; lists the server sends are JSON
// arrays, never null.
package adminapi
