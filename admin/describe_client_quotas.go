package admin

// DescribeClientQuotas (key 48), versions 0-1.
//
//   - v0 (KIP-546): DESCRIBE_CONFIGS on the cluster, else
//     CLUSTER_AUTHORIZATION_FAILED. The quotas of the entities that match
//     every filter component: match type 0 an entity of that type with that name, 1 its
//     <default>, 2 any of that type (named or default); strict leaves out
//     entities with a type the filter does not name. No component matches
//     every entity (with strict, none). A component of an unknown type, a
//     type named twice, an unknown match type or an exact match without a
//     name answers INVALID_REQUEST.
//   - v1: flexible versions.

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/quota"
)

func (h *Handlers) handleDescribeClientQuotas(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code int16, msg string) (kafka.Reply, error) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return kafka.Reply{Response: resp}, nil
	}
	if !h.authz.Authorize(req, acl.OpDescribeConfigs, acl.Cluster) {
		return fail(kerr.ClusterAuthorizationFailed.Code, "DESCRIBE_CONFIGS on the cluster is denied")
	}
	filter := map[string]kmsg.DescribeClientQuotasRequestComponent{}
	for _, c := range r.Components {
		if c.EntityType != quota.EntityUser && c.EntityType != quota.EntityClientID {
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("unsupported entity type %q", c.EntityType))
		}
		if _, dup := filter[c.EntityType]; dup {
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("entity type %q given twice", c.EntityType))
		}
		if c.MatchType > 2 || c.MatchType < 0 || (c.MatchType == 0 && c.Match == nil) {
			return fail(kerr.InvalidRequest.Code, fmt.Sprintf("bad match for entity type %q", c.EntityType))
		}
		filter[c.EntityType] = c
	}
	all, err := h.quotas.List(ctx)
	if err != nil {
		return fail(kerr.UnknownServerError.Code, err.Error())
	}
	var matched []quota.Entity
	for e := range all {
		if quotaFilterMatches(e, filter, r.Strict) {
			matched = append(matched, e)
		}
	}
	sort.Slice(matched, func(i, j int) bool { return matched[i].String() < matched[j].String() })
	for _, e := range matched {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		types, names := entityParts(e)
		for i := range types {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = types[i], names[i]
			entry.Entity = append(entry.Entity, ee)
		}
		keys := make([]string, 0, len(all[e]))
		for k := range all[e] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ev := kmsg.NewDescribeClientQuotasResponseEntryValue()
			ev.Key, ev.Value = k, all[e][k]
			entry.Values = append(entry.Values, ev)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return kafka.Reply{Response: resp}, nil
}

// quotaFilterMatches reports whether e passes the filter components (by
// entity type).
func quotaFilterMatches(e quota.Entity, filter map[string]kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	if strict && len(filter) == 0 {
		return false
	}
	comps := map[string]quota.Name{quota.EntityUser: e.User, quota.EntityClientID: e.ClientID}
	for typ, n := range comps {
		c, filtered := filter[typ]
		if !filtered {
			if strict && n.Set {
				return false
			}
			continue
		}
		switch {
		case !n.Set:
			return false
		case c.MatchType == 0 && (n.Default || n.Name != *c.Match):
			return false
		case c.MatchType == 1 && !n.Default:
			return false
		}
	}
	return true
}
