package group

// ListGroups (key 16), versions 0-5.
//
//   - v3: flexible versions.  v4: StatesFilter and GroupState (KIP-518).
//   - v5: TypesFilter and GroupType (KIP-848): "classic" or "consumer"; a
//     consumer group's protocol type is "consumer" and its state one of
//     Empty, Assigning, Reconciling, Stable. KIP-932 share groups
//     (SetShareGroups) are type and protocol type "share", Empty or Stable. Both filters match without
//     regard to case, as Kafka's.
//
// Lists the groups this node coordinates: those of every offsets
// partition it leads, each loaded when this node became its leader
// (LeadershipChanged). While one of them is still loading, the answer is
// COORDINATOR_LOAD_IN_PROGRESS with no groups, as Kafka 4's coordinator
// runtime answers (a read of a loading shard fails the whole list), never
// a partial list that would hide the loading partitions' groups. Clients
// ask every broker and merge.
//
// With an authorizer, Describe on the cluster lists every group; otherwise
// only the groups the principal may Describe are listed (no error).

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

// summary is a group's listing.
type summary struct {
	id, protocolType string
	state            string
	typ              string // "classic" or "consumer"
}

// summary is g's listing; ok false for a dead group.
func (g *group) summary() (summary, bool) {
	if g.isShare() {
		return summary{}, false // listed by ShareGroups
	}
	if g.consumer != nil {
		return summary{id: g.id, protocolType: "consumer", state: g.consumer.state(), typ: "consumer"}, true
	}
	return summary{id: g.id, protocolType: g.protocolType, state: g.state.String(), typ: "classic"}, g.state != StateDead
}

func (c *Coordinator) handleListGroups(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.ListGroupsRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
		runners, err := c.listable()
		if err != nil {
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		var all []summary
		for _, rn := range runners {
			var s summary
			ok := false
			_, err := c.call(ctx, rn, func(g *group, send replyFn) {
				s, ok = g.summary()
				send(nil, -1)
			}, func() kmsg.Response { return nil })
			if err != nil {
				return nil, err
			}
			if ok {
				all = append(all, s)
			}
		}
		if sg := c.shareGroups(); sg != nil {
			for _, l := range sg.ListShareGroups() {
				all = append(all, summary{id: l.ID, protocolType: "share", state: l.State, typ: "share"})
			}
		}
		slices.SortFunc(all, func(a, b summary) int { return strings.Compare(a.id, b.id) })
		everyGroup := c.cfg.Authorizer.Permits(req, acl.OpDescribe, acl.Cluster)
		for _, s := range all {
			if !everyGroup && !c.cfg.Authorizer.Permits(req, acl.OpDescribe, acl.Group(s.id)) {
				continue
			}
			if len(r.StatesFilter) > 0 && !slices.ContainsFunc(r.StatesFilter, func(f string) bool {
				return strings.EqualFold(f, s.state)
			}) {
				continue
			}
			if len(r.TypesFilter) > 0 && !slices.ContainsFunc(r.TypesFilter, func(f string) bool {
				return strings.EqualFold(f, s.typ)
			}) {
				continue
			}
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = s.id, s.protocolType, s.state, s.typ
			resp.Groups = append(resp.Groups, lg)
		}
		return resp, nil
	}}, nil
}
