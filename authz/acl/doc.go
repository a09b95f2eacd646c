// Package acl is Kafka's ACL model as values and arithmetic: a Binding
// (Kafka's AclBinding) allows or denies a principal, from a host, an
// operation on the resources its pattern selects (a literal name, the
// literal "*", or a prefix) among topics, groups, the cluster and
// transactional ids; a Filter (AclBindingFilter) selects bindings for
// DescribeAcls and DeleteAcls; a Set decides as the StandardAuthorizer does
// (deny over allow, implied operations). The codes are Kafka's wire codes.
//
// acl imports no Shale package and no wire protocol: the control plane
// stores bindings with it, and authz applies them to requests.
package acl
