// Package quota is Kafka's client quotas as arithmetic: the byte-rate,
// request-rate and cold-read quotas of users and client ids, their
// entities and Kafka's precedence among them (KIP-55), the rates measured
// over sample windows (Kafka's Rate over quota.window.num windows of
// quota.window.size.seconds) and the throttle time a client over its quota
// is told to wait (KIP-13, KIP-124, KIP-219).
//
// It reads no clock and does no I/O: callers pass the time. The quota
// configurations come from the control plane (controlplane.ClientQuotas);
// the Kafka handlers record what each request used and put the throttle
// time in their responses, and the transport (package kafka) mutes the
// connection for that long. It imports no other package of Shale.
package quota
