package groupstest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// listGroups asks node id alone for its groups; false while it loads or
// cannot answer.
func (c *cluster) listGroups(ctx context.Context, id int32) ([]string, bool) {
	resp, err := c.request(ctx, id, kmsg.NewPtrListGroupsRequest())
	if err != nil {
		return nil, false
	}
	r := resp.(*kmsg.ListGroupsResponse)
	if r.ErrorCode != 0 {
		return nil, false
	}
	var out []string
	for _, g := range r.Groups {
		out = append(out, g.Group)
	}
	return out, true
}

// TestDeletedTopicOffsetsGoneWhenCoordinatorReturns: the offsets
// partition of a group has one replica; its node is killed, the topic
// the group committed to is deleted and created again meanwhile, and the
// node returns. Its coordinator loads the partition after the deletion,
// which it never saw as an event: it deletes the offset recorded with the
// old topic's id before serving the group, so OffsetFetch by the new id
// answers no offset and the group, left with nothing, is gone from
// ListGroups (an offset only hidden by the id check would keep it listed).
func TestDeletedTopicOffsetsGoneWhenCoordinatorReturns(t *testing.T) {
	const grp, topic = "returning", "reborn"
	c := startCluster(t, "--offsets-topic-replication-factor", "1")
	ctx := proctest.Context(t, 3*time.Minute)
	adm := kadm.NewClient(c.Client())
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	var oldID [16]byte
	if err := proctest.WaitFor(30*time.Second, func() bool {
		var err error
		oldID, err = proctest.TopicID(ctx, c.Client(), topic)
		return err == nil
	}); err != nil {
		t.Fatalf("id of %s: %v", topic, err)
	}
	x := mustCoordinator(t, c, ctx, grp)
	if err := proctest.WaitFor(30*time.Second, func() bool { return c.commitOffset(ctx, x, grp, topic, oldID, 3) == nil }); err != nil {
		t.Fatal("commit: ", err)
	}
	if got, err := c.fetchOffset(ctx, x, grp, topic, oldID); err != nil || got != 3 {
		t.Fatalf("fetch before: %d %v, want 3", got, err)
	}
	if err := proctest.WaitFor(30*time.Second, func() bool {
		gs, ok := c.listGroups(ctx, x)
		return ok && slices.Contains(gs, grp)
	}); err != nil {
		t.Fatal("the group is not listed before: ", err)
	}

	c.node(x).Kill()
	if resp, err := adm.DeleteTopic(ctx, topic); err != nil || resp.Err != nil {
		t.Fatalf("delete %s: %v %v", topic, err, resp.Err)
	}
	var newID [16]byte
	if err := proctest.WaitFor(30*time.Second, func() bool {
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		if err != nil || (resp.Err != nil && !kerr.IsRetriable(resp.Err) && resp.Err != kerr.TopicAlreadyExists) {
			return false
		}
		newID, err = proctest.TopicID(ctx, c.Client(), topic)
		return err == nil && newID != oldID
	}); err != nil {
		t.Fatalf("create %s again: %v", topic, err)
	}

	c.node(x).Start()
	if err := proctest.WaitFor(60*time.Second, func() bool {
		id, err := c.coordinator(ctx, grp)
		return err == nil && id == x
	}); err != nil {
		t.Fatalf("node %d never coordinated %s again: %v", x, grp, err)
	}
	var gs []string
	if err := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		var ok bool
		gs, ok = c.listGroups(ctx, x)
		return ok && !slices.Contains(gs, grp)
	}); err != nil {
		t.Fatalf("after the deletion node %d still lists %s (%v): its offset was not deleted: %v", x, grp, gs, err)
	}
	if got, err := c.fetchOffset(ctx, x, grp, topic, newID); err != nil || got != -1 {
		t.Fatalf("fetch by the new id: %d %v, want -1", got, err)
	}
}
