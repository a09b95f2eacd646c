package groupstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/group"
	"github.com/shale-io/shale/internal/proctest"
)

// listedGroup is one group of `shale group list --output json`.
type listedGroup struct {
	Group string `json:"group"`
	Type  string `json:"type"`
}

// cliGroupList runs `shale group list` (the binary) against every node.
func (c *cluster) cliGroupList(ctx context.Context) ([]listedGroup, error) {
	var seeds []string
	for _, id := range c.IDs() {
		seeds = append(seeds, c.node(id).Kafka())
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, shaleBin, "group", "list", "--bootstrap", strings.Join(seeds, ","), "--output", "json").Output()
	if err != nil {
		return nil, fmt.Errorf("shale group list: %w: %s", err, out)
	}
	var gs []listedGroup
	if err := json.Unmarshal(out, &gs); err != nil {
		return nil, fmt.Errorf("shale group list: %w: %s", err, out)
	}
	return gs, nil
}

// TestGroupListAfterFullRestart (issue 25): a classic group with committed
// offsets, a KIP-848 consumer group that committed and a share group that
// accepted records; all three nodes stop, NATS restarts, the nodes start
// again; `shale group
// list` (the binary, no describe first) lists every group with its type
// within a bounded wait after the nodes are ready. Before share group
// membership was written to __consumer_offsets the share group was
// missing: it lived in the old coordinator's memory only.
func TestGroupListAfterFullRestart(t *testing.T) {
	const topic = "restarted"
	c := startCluster(t, "--share-auto-offset-reset", "earliest")
	ctx := proctest.Context(t, 3*time.Minute)
	cl := c.Client()
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("v-", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// classic: a simple commit (generation -1), as kadm and Connect do.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1})
	if err := proctest.WaitFor(30*time.Second, func() bool {
		r, err := adm.CommitOffsets(ctx, "restart-classic", os)
		return err == nil && r.Error() == nil
	}); err != nil {
		t.Fatal("classic commit: ", err)
	}
	// consumer: franz-go takes KIP-848 by itself; it commits what it read.
	cons := c.Client(kgo.ConsumerGroup("restart-consumer"), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond))
	read := 0
	for read < 10 && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		read += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal("consumer commit: ", err)
	}
	cons.Close()
	// share: a member accepts records and leaves.
	log := newShareLog()
	sm := c.startShareMember(t, "m1", "restart-share", topic, log, false)
	if err := proctest.WaitFor(60*time.Second, func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.confirmed) > 0
	}); err != nil {
		t.Fatal("no share acceptance confirmed: ", err)
	}
	sm.stop()
	want := []listedGroup{{"restart-classic", "classic"}, {"restart-consumer", "consumer"}, {"restart-share", "share"}}
	if err := proctest.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		gs, err := c.cliGroupList(ctx)
		return err == nil && slices.Equal(gs, want)
	}); err != nil {
		gs, lerr := c.cliGroupList(ctx)
		t.Fatalf("before the restart: %+v %v", gs, lerr)
	}

	for _, id := range c.IDs() {
		c.node(id).Stop(30 * time.Second)
	}
	c.RestartNATS()
	c.Start(c.IDs()...)
	start := time.Now()
	var gs []listedGroup
	var lerr error
	if err := proctest.Poll(30*time.Second, 200*time.Millisecond, func() bool {
		gs, lerr = c.cliGroupList(ctx)
		return lerr == nil && slices.Equal(gs, want)
	}); err != nil {
		t.Fatalf("shale group list after a full restart: %+v %v, want %+v", gs, lerr, want)
	}
	t.Logf("shale group list listed every group %v after the nodes were ready", time.Since(start).Round(time.Millisecond))
}

// shareHeartbeat sends one ShareGroupHeartbeat to grp's coordinator.
func (c *cluster) shareHeartbeat(ctx context.Context, grp, member string, epoch int32, topics []string) (*kmsg.ShareGroupHeartbeatResponse, error) {
	id, err := c.coordinator(ctx, grp)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = grp, member, epoch, topics
	resp, err := c.request(ctx, id, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.ShareGroupHeartbeatResponse), nil
}

// shareHeartbeatOK retries a heartbeat the coordinator could not take
// (moving, loading) and fails the test on any other error.
func (c *cluster) shareHeartbeatOK(ctx context.Context, t *testing.T, grp, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	var resp *kmsg.ShareGroupHeartbeatResponse
	var last error
	if err := proctest.Poll(60*time.Second, 100*time.Millisecond, func() bool {
		r, err := c.shareHeartbeat(ctx, grp, member, epoch, topics)
		if err != nil {
			last = err
			return false
		}
		switch err := kerr.ErrorForCode(r.ErrorCode); {
		case err == nil:
			resp = r
			return true
		case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorLoadInProgress), errors.Is(err, kerr.CoordinatorNotAvailable):
			last = err
			return false
		default:
			t.Fatalf("heartbeat of %s at epoch %d: %v", member, epoch, err)
		}
		return false
	}); err != nil {
		t.Fatalf("heartbeat of %s at epoch %d: %v", member, epoch, last)
	}
	return resp
}

// TestShareGroupMembershipSurvivesCoordinatorMove (issue 25): members join
// and leave a share group (group epoch 4: a joins, b joins, b leaves, d
// joins), the coordinator is killed, and at the new one the members
// heartbeat on at their epochs (no UNKNOWN_MEMBER_ID nor
// FENCED_MEMBER_EPOCH) and ShareGroupDescribe shows the same group epoch,
// members, member epochs and assignments. Before the membership was
// written to __consumer_offsets the new coordinator did not know the
// group: UNKNOWN_MEMBER_ID.
func TestShareGroupMembershipSurvivesCoordinatorMove(t *testing.T) {
	const grp, topic = "share-moved", "moved"
	c := startCluster(t, "--group-share-session-timeout", "60s")
	ctx := proctest.Context(t, 3*time.Minute)
	adm := kadm.NewClient(c.Client())
	if resp, err := adm.CreateTopic(ctx, 4, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	if err := proctest.WaitFor(30*time.Second, func() bool { _, err := c.coordinator(ctx, grp); return err == nil }); err != nil {
		t.Fatal("no coordinator for the group: ", err) // FindCoordinator creates __consumer_offsets
	}
	c.waitInSync(group.OffsetsTopic, group.PartitionFor(grp, 50), 3, 30*time.Second)
	subs := []string{topic}
	a := c.shareHeartbeatOK(ctx, t, grp, "member-a", 0, subs)
	c.shareHeartbeatOK(ctx, t, grp, "member-b", 0, subs)
	if r := c.shareHeartbeatOK(ctx, t, grp, "member-b", -1, nil); r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	d := c.shareHeartbeatOK(ctx, t, grp, "member-d", 0, subs)
	if a.MemberEpoch != 1 || d.MemberEpoch != 4 || d.Assignment == nil || len(d.Assignment.TopicPartitions) != 1 {
		t.Fatalf("epochs before the move: a %d, d %d (%+v)", a.MemberEpoch, d.MemberEpoch, d.Assignment)
	}
	before, err := c.describeShare(ctx, grp)
	if err != nil {
		t.Fatal(err)
	}

	victim, err := c.coordinator(ctx, grp)
	if err != nil {
		t.Fatal(err)
	}
	c.node(victim).Kill()
	if err := proctest.WaitFor(60*time.Second, func() bool {
		id, err := c.coordinator(ctx, grp)
		return err == nil && id != victim
	}); err != nil {
		t.Fatal("no new coordinator: ", err)
	}
	ra := c.shareHeartbeatOK(ctx, t, grp, "member-a", 1, nil)
	rd := c.shareHeartbeatOK(ctx, t, grp, "member-d", 4, nil)
	if ra.MemberEpoch != 1 || rd.MemberEpoch != 4 {
		t.Fatalf("epochs after the move: a %d, d %d", ra.MemberEpoch, rd.MemberEpoch)
	}
	after, err := c.describeShare(ctx, grp)
	if err != nil {
		t.Fatal(err)
	}
	summary := func(g kmsg.ShareGroupDescribeResponseGroup) string {
		s := fmt.Sprintf("epoch %d state %s:", g.GroupEpoch, g.GroupState)
		for _, m := range g.Members {
			s += fmt.Sprintf(" %s@%d", m.MemberID, m.MemberEpoch)
			for _, tp := range m.Assignment.TopicPartitions {
				s += fmt.Sprintf(" %s%v", tp.Topic, tp.Partitions)
			}
		}
		return s
	}
	if summary(after) != summary(before) || after.GroupEpoch != 4 || len(after.Members) != 2 {
		t.Fatalf("after the move: %s, before: %s", summary(after), summary(before))
	}
	t.Logf("coordinator %d killed; the new one shows %s", victim, summary(after))
}
