// Package natsembed runs the real NATS server (with JetStream) inside the
// Shale process. It is the control plane's default transport on one machine:
// `shale serve` starts one embedded server on loopback with JetStream storage
// under the node's data directory, and tests start one server or a small
// in-process cluster. A deployment that points at an external NATS cluster
// does not use this package.
//
// The package imports no other Shale package.
package natsembed
