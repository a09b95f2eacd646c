// Package authz is Shale's authorizer: Kafka's StandardAuthorizer applied
// to requests. The ACL model itself (Binding, Filter, Set and the pure
// decisions Set.Decide, Set.DecideAny, Filter.Matches) is in authz/acl;
// Authorizer holds the bindings in force, the super users and
// allow_everyone_if_no_acl_found, answers for a *kafka.Request's principal
// and address, and writes the audit log of denials. A nil *Authorizer
// allows everything: the node without `authorizer: standard`.
//
// authz sits above kafka (it reads a request's principal and address) and
// below every package with API handlers (ingest, fetch, group, txn,
// admin), which call it. controlplane stores the bindings through authz/acl
// only, knowing no wire protocol; broker wires the two together.
package authz
