package admin

// DescribeUserScramCredentials (key 50), version 0.
//
//   - v0 (KIP-554): each user's mechanisms and iteration counts, never the
//     keys; null users is every user with a credential. A user without
//     one is RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE.
//
// With an authorizer it needs Describe on the cluster, else the answer is
// CLUSTER_AUTHORIZATION_FAILED with no results.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (h *Handlers) handleDescribeUserSCRAMCredentials(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !h.authz.Authorize(req, acl.OpDescribe, acl.Cluster) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return kafka.Reply{Response: resp}, nil
	}
	all, err := h.scram.List(ctx)
	if err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, &msg
		return kafka.Reply{Response: resp}, nil
	}
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var users []string
	for _, c := range all {
		if _, ok := byUser[c.User]; !ok {
			users = append(users, c.User)
		}
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = scramMechanismCode(c.Mechanism), int32(c.Iterations)
		byUser[c.User] = append(byUser[c.User], ci)
	}
	if r.Users != nil {
		users = users[:0]
		for _, u := range r.Users {
			users = append(users, u.Name)
		}
	}
	seen := map[string]int{}
	for _, u := range users {
		seen[u]++
	}
	for _, u := range users {
		rr := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		rr.User = u
		switch infos, ok := byUser[u]; {
		case seen[u] > 1:
			msg := "a user may appear once per request"
			rr.ErrorCode, rr.ErrorMessage = kerr.DuplicateResource.Code, &msg
		case !ok:
			msg := "attempt to describe a user credential that does not exist"
			rr.ErrorCode, rr.ErrorMessage = kerr.ResourceNotFound.Code, &msg
		default:
			rr.CredentialInfos = infos
		}
		resp.Results = append(resp.Results, rr)
	}
	return kafka.Reply{Response: resp}, nil
}
