package group

// DeleteGroups (key 42), versions 0-3.
//
//   - v2: flexible versions.
//   - v3 (KIP-1043): each error carries an ErrorMessage ("Group g not
//     found.", "Group g is not empty.", else the error's description).
//
// Only a group without members may be deleted (NON_EMPTY_GROUP); an
// unknown one is GROUP_ID_NOT_FOUND. Deletion writes tombstones for the
// group's metadata and every committed offset, then the group is Dead and
// forgotten. A KIP-932 share group (SetShareGroups) is deleted by package
// share, its share-partitions' progress forgotten with it. A deleted
// group's group configs are deleted with it, as in Kafka
// (group_configs.go).
//
// With an authorizer each group needs Delete, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz/acl"
	"github.com/shale-io/shale/kafka"
)

func (c *Coordinator) handleDeleteGroups(ctx context.Context, req *kafka.Request) (kafka.Reply, error) {
	r := req.Msg.(*kmsg.DeleteGroupsRequest)
	return kafka.Reply{Wait: func(ctx context.Context) (kmsg.Response, error) {
		resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, id := range r.Groups {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group = id
			rn, err := c.lookup(id, false)
			sg := c.shareGroups()
			switch {
			case !c.allowed(req, acl.OpDelete, acl.Group(id)):
				dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			case sg != nil && (rn == nil || c.holdsShareGroup(ctx, rn)):
				// Not a classic or consumer group here: a share group?
				existed, deleted, serr := sg.DeleteShareGroup(id)
				switch {
				case serr != nil:
					dg.ErrorCode = errorCode(serr)
				case !existed && err != nil:
					dg.ErrorCode = errorCode(err)
				case !existed:
					dg.ErrorCode = kerr.GroupIDNotFound.Code
				case !deleted:
					dg.ErrorCode = kerr.NonEmptyGroup.Code
				}
			case err != nil:
				dg.ErrorCode = errorCode(err)
			case rn == nil:
				dg.ErrorCode = kerr.GroupIDNotFound.Code
			default:
				_, err := c.call(ctx, rn, func(g *group, send replyFn) {
					var hw int64
					dg.ErrorCode, hw = g.deleteGroup()
					send(nil, hw)
				}, func() kmsg.Response { dg.ErrorCode = kerr.GroupIDNotFound.Code; return nil })
				if err != nil {
					return nil, err
				}
			}
			if dg.ErrorCode == 0 {
				c.deleteGroupConfigs(ctx, id)
			}
			if r.Version >= 3 {
				dg.ErrorMessage = deleteGroupMessage(id, dg.ErrorCode)
			}
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}}, nil
}

// deleteGroupMessage is a v3 group's ErrorMessage for code: nil for none.
func deleteGroupMessage(id string, code int16) *string {
	var msg string
	switch err := kerr.ErrorForCode(code); {
	case err == nil:
		return nil
	case code == kerr.GroupIDNotFound.Code:
		msg = fmt.Sprintf("Group %s not found.", id)
	case code == kerr.NonEmptyGroup.Code:
		msg = fmt.Sprintf("Group %s is not empty.", id)
	default:
		msg = err.(*kerr.Error).Description
	}
	return &msg
}

// deleteGroup tombstones the group and marks it Dead (its runner then
// stops and forgets it).
func (g *group) deleteGroup() (int16, int64) {
	switch {
	case g.state == StateDead:
		return kerr.GroupIDNotFound.Code, -1
	case len(g.members) > 0 || g.state != StateEmpty:
		return kerr.NonEmptyGroup.Code, -1
	case g.consumer != nil && len(g.consumer.members) > 0:
		return kerr.NonEmptyGroup.Code, -1
	}
	recs := g.groupTombstones()
	for tp := range g.latestOffsets() {
		recs = append(recs, record{key: offsetKey(g.id, tp)})
	}
	hw, err := g.persist(recs)
	if err != nil {
		return errorCode(err), -1
	}
	for tp := range g.latestOffsets() {
		g.forgetOffset(tp, hw)
	}
	g.consumer = nil
	g.setState(StateDead)
	return 0, hw
}

// groupTombstones are the tombstones of g's metadata: the classic group
// metadata and, for a consumer group, its records (not its offsets).
func (g *group) groupTombstones() []record {
	recs := []record{{key: groupKey(g.id)}}
	if g.consumer != nil {
		recs = append(recs, g.consumer.tombstones(g.id)...)
	}
	return recs
}
