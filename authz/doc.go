// Package authz is Shale's authorizer: Kafka's ACLs and the rules of its
// StandardAuthorizer. A Binding (Kafka's AclBinding) allows or denies a
// principal, from a host, an operation on the resources its pattern
// selects (a literal name, the literal "*", or a prefix) among topics,
// groups, the cluster and transactional ids; a Filter (AclBindingFilter)
// selects bindings for DescribeAcls and DeleteAcls.
//
// The decisions (Set.Decide, Set.DecideAny, Filter.Matches) are pure
// functions of the bindings; Authorizer holds the bindings in force, the
// super users and allow_everyone_if_no_acl_found, and writes the audit log
// of denials. A nil *Authorizer allows everything: the node without
// `authorizer: standard`.
//
// authz sits above kafka (it reads a request's principal and address) and
// below every package with API handlers (ingest, fetch, group, txn,
// admin), which call it; controlplane stores its bindings and broker
// wires the two together.
package authz
