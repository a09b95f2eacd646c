package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// browser is TestConsoleInBrowser's page, with the admin token.
type browser struct {
	ctx   context.Context
	show  func(base, route, page string)
	text  func(sel string) string
	count func(sel string) int
	shots string
}

func (b browser) click(t *testing.T, sel string) {
	t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

func (b browser) wait(t *testing.T, sel string) {
	t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("wait for %s: %v", sel, err)
	}
}

// snap writes a screenshot named name when SHALE_CONSOLE_SCREENSHOTS is set.
func (b browser) snap(t *testing.T, name string) {
	t.Helper()
	if b.shots == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, "console-"+name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// partitionState is a partition's leader and replicas as Kafka's Metadata
// reports them.
func partitionState(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, p int32) (int32, []int32) {
	t.Helper()
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	pd, ok := td[topic].Partitions[p]
	if !ok {
		return -1, nil
	}
	return pd.Leader, pd.Replicas
}

// checkActions runs the console's three actions with the admin token and
// checks each one's effect through Kafka: a preferred leader election of a
// partition whose leader is not its first replica, the balancer's plan
// for a topic whose replicas are all on node 1 (shown, confirmed, then its
// reassignments done), and an offset reset of the inactive group to
// earliest (a dry run shown, then committed).
func checkActions(t *testing.T, ctx context.Context, c cluster, cl *kgo.Client, adm *kadm.Client, coord *broker.Node, b browser) {
	n1 := c.nodes[0]
	base := "http://" + n1.AdminAddr()

	// Preferred election: partition 1's replicas reordered so that its
	// leader is not the first (a reassignment to the same brokers keeps
	// the leader).
	leader, replicas := partitionState(t, ctx, adm, topic, 1)
	order := append([]int32{}, replicas...)
	for order[0] == leader {
		order = append(order[1:], order[0])
	}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 1, order)
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res.Error() != nil {
		t.Fatalf("reorder %s-1 to %v: %v %v", topic, order, err, res.Error())
	}
	if err := proctest.Poll(20*time.Second, 50*time.Millisecond, func() bool {
		leader, replicas = partitionState(t, ctx, adm, topic, 1)
		return slices.Equal(replicas, order)
	}); err != nil || leader == order[0] {
		t.Fatalf("%s-1 reordered: leader %d, replicas %v (%v); want %v led by another than %d", topic, leader, replicas, err, order, order[0])
	}
	b.show(base, "", "cluster")
	b.show(base, "#/topic/"+topic, "topic")
	sel := "#partitions tr[data-partition='1'] button.elect"
	if n := b.count(sel); n != 1 {
		t.Fatalf("topic page: %d election buttons on partition 1 (leader %d, preferred %d), want 1", n, leader, order[0])
	}
	if n := b.count("#partitions tr[data-partition='0'] button.elect"); n != 0 {
		t.Fatalf("topic page: partition 0 is led by its preferred replica and has %d election buttons", n)
	}
	b.click(t, sel)
	b.wait(t, "#action-result.ok")
	b.snap(t, "elect")
	// The broker answered once the partition record changed; the node
	// asked for metadata sees it when its control-plane cache does.
	if err := proctest.Poll(20*time.Second, 50*time.Millisecond, func() bool {
		leader, _ = partitionState(t, ctx, adm, topic, 1)
		return leader == order[0]
	}); err != nil {
		t.Fatalf("after the console's election (%q): %s-1 led by %d, want %d", b.text("#action-result"), topic, leader, order[0])
	}

	t.Logf("election: %s-1 led by %d, its preferred replica", topic, order[0])

	// Rebalance: six partitions all on node 1; the plan moves some away.
	const skewed = "skewed"
	creq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = skewed, -1, -1
	for p := range int32(6) {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, []int32{1}
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	}
	creq.Topics, creq.TimeoutMillis = append(creq.Topics, ct), 10000
	cresp, err := creq.RequestWith(ctx, cl)
	if err != nil || cresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", skewed, err, cresp)
	}
	var bp adminapi.BalancePlan
	if err := proctest.Poll(20*time.Second, 50*time.Millisecond, func() bool {
		bp = getJSON[adminapi.BalancePlan](t, ctx, n1, adminapi.BalancePath)
		return slices.ContainsFunc(bp.Moves, func(m adminapi.BalanceMove) bool { return m.Topic == skewed && len(m.Target) > 0 })
	}); err != nil {
		t.Fatalf("no plan to move %s's replicas: %v\n%+v", skewed, err, bp)
	}
	b.show(base, "#/balance", "balance")
	b.click(t, "#rebalance-review")
	b.wait(t, "#rebalance-apply")
	b.snap(t, "rebalance-confirm")
	if n, want := b.count("#rebalance-confirm li"), len(bp.Moves); n == 0 || n > want {
		t.Fatalf("rebalance confirmation lists %d reassignments; the plan has %d moves", n, want)
	}
	b.click(t, "#rebalance-apply")
	b.wait(t, "#rebalance-done")
	if n := b.count("#action-result.ok"); n != 1 {
		t.Fatalf("rebalance: %q", b.text("#action-result"))
	}
	for _, m := range bp.Moves {
		if m.Kind == "leader" || len(m.Target) == 0 {
			continue
		}
		var got []int32
		if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
			_, got = partitionState(t, ctx, adm, m.Topic, m.Partition)
			return slices.Equal(got, m.Target)
		}); err != nil {
			t.Fatalf("after the console's rebalance: %s-%d on %v, the plan's target %v", m.Topic, m.Partition, got, m.Target)
		}
	}

	t.Logf("rebalance: the plan's moves done")

	// Offset reset of the inactive group, on its coordinator's console:
	// the dry run first, then the commit.
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cbase := "http://" + coord.AdminAddr()
	b.show(cbase, "", "cluster")
	b.show(cbase, "#/group/"+group, "group")
	b.click(t, "#reset-preview")
	b.wait(t, "#reset-apply")
	b.snap(t, "reset")
	s0, _ := starts.Lookup(topic, 0)
	if got := strings.ReplaceAll(b.text("#reset-plan tr[data-partition='orders-0'] td.new"), ",", ""); got != fmt.Sprint(s0.Offset) {
		t.Fatalf("reset dry run: partition 0 to %s, want its log start %d", got, s0.Offset)
	}
	if fo, err := adm.FetchOffsets(ctx, group); err != nil {
		t.Fatal(err)
	} else if o, _ := fo.Lookup(topic, 0); o.At != committed {
		t.Fatalf("after the dry run: partition 0 at %d, want %d still", o.At, committed)
	}
	b.click(t, "#reset-apply")
	b.wait(t, "#action-result.ok")
	fo, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		s, _ := starts.Lookup(topic, p)
		if o, _ := fo.Lookup(topic, p); o.At != s.Offset {
			t.Fatalf("after the console's reset: %s's %s-%d at %d, want the log start %d", group, topic, p, o.At, s.Offset)
		}
	}

	// A group with a member: its reset is refused with the broker's
	// state of the group, shown on the page.
	const liveGroup = "live"
	live, err := kgo.NewClient(kgo.SeedBrokers(n1.KafkaAddr()), kgo.ConsumerGroup(liveGroup), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	var lcoord *broker.Node
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		for _, n := range c.nodes {
			l := getJSON[adminapi.ConsumerLag](t, ctx, n, adminapi.ConsumerLagPath+"?group="+liveGroup)
			if len(l.Groups) == 1 && l.Groups[0].Members == 1 {
				lcoord = n
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the live group's member not sampled: %v", err)
	}
	lbase := "http://" + lcoord.AdminAddr()
	b.show(lbase, "", "cluster")
	b.show(lbase, "#/group/"+liveGroup, "group")
	b.click(t, "#reset-preview")
	b.wait(t, "#reset-apply")
	b.click(t, "#reset-apply")
	b.wait(t, "#action-result.error")
	if got := b.text("#action-result"); !strings.HasPrefix(got, "409 ") || !strings.Contains(got, "Stable with 1 members") {
		t.Fatalf("reset of a group with a member: the page shows %q; want the 409 with the group's state", got)
	}
}

// checkReadOnly opens the console with the read-only token in a browser
// context of its own: the pages show, with no action, and a write the page
// sends anyway is refused by the listener (403).
func checkReadOnly(t *testing.T, parent context.Context, base, cbase string) {
	rctx, cancel := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	defer cancel()
	asked := answerBasicAuth(t, rctx, "read-only browser", "viewer", readToken)
	open := func(url, page string) {
		t.Helper()
		if err := chromedp.Do(rctx, chromedp.Navigate(url)); err != nil {
			t.Fatalf("read-only browser: %s: %v", url, err)
		}
		if err := chromedp.Do(rctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`body[data-page=%q]`, page)))); err != nil {
			t.Fatalf("read-only browser: %s: %v", url, err)
		}
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(rctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	open(base+"/console/#/topic/"+topic, "topic")
	if asked() == 0 {
		t.Fatal("read-only browser: not asked for credentials")
	}
	if role, err := chromedp.Run(rctx, chromedp.Text(chromedp.CSS("#role"))); err != nil || role != "read-only" {
		t.Fatalf("read-only browser: role %q %v", role, err)
	}
	if n := count("button"); n != 0 {
		t.Fatalf("read-only browser: the topic page has %d buttons", n)
	}
	open(base+"/console/#/balance", "balance")
	if n := count("#rebalance-review, button"); n != 0 {
		t.Fatalf("read-only browser: the balance page has %d buttons", n)
	}
	open(cbase+"/console/#/group/"+group, "group")
	if n := count("#reset-form"); n != 0 {
		t.Fatalf("read-only browser: the group page has the reset form")
	}
	// The page's own same-origin POST, with the browser's Basic
	// credentials of the read-only token: refused.
	got, err := chromedp.Run(rctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q, {method: "POST", credentials: "same-origin",
		headers: {"Content-Type": "application/json"}, body: JSON.stringify({topic: %q})}).then(async r => r.status + " " + await r.text())`,
		adminapi.ConsoleElectPreferredPath, topic), chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "read-only") {
		t.Fatalf("read-only browser: a POST of an election: %q %v; want 403 saying read-only", got, err)
	}
}

// The share group of the test: it consumes shareTopic, then leaves.
const (
	shareTopic = "tasks"
	shareGroup = "workers"
	// sharePer is the records of each of shareTopic's three partitions.
	sharePer = 10
)

// shareStartOffsets is the share group's start offset of each partition
// of shareTopic (DescribeShareGroupOffsets).
func shareStartOffsets(ctx context.Context, adm *kadm.Client) map[int32]int64 {
	return testnode.ShareStartOffsets(ctx, adm, shareGroup, shareTopic)
}

// startShared has a franz-go share consumer of shareGroup accept every
// record of shareTopic (three partitions of sharePer records, the nodes
// starting share groups at earliest); the function it returns waits for
// that, has the member leave and returns the group's coordinator.
func startShared(t *testing.T, ctx context.Context, n1 *broker.Node, cl *kgo.Client, adm *kadm.Client) func() int32 {
	t.Helper()
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, shareTopic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", shareTopic, err, r.Err)
	}
	var recs []*kgo.Record
	for i := range 3 * sharePer {
		recs = append(recs, &kgo.Record{Topic: shareTopic, Partition: int32(i % 3), Value: fmt.Appendf(nil, "task-%d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", shareTopic, err)
	}
	m := testnode.StartShareAcceptor(t, n1.KafkaAddr(), shareGroup, shareTopic)
	return func() int32 {
		t.Helper()
		err := proctest.Poll(60*time.Second, 100*time.Millisecond, func() bool {
			s := shareStartOffsets(ctx, adm)
			return len(s) == 3 && s[0] == sharePer && s[1] == sharePer && s[2] == sharePer
		})
		m.Stop()
		if err != nil {
			t.Fatalf("the share group never accepted %s's records: %v", shareTopic, shareStartOffsets(ctx, adm))
		}
		if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
			d, err := adm.DescribeShareGroups(ctx, shareGroup)
			return err == nil && d[shareGroup].GroupState == "Empty"
		}); err != nil {
			t.Fatalf("the share group's member never left: %v", err)
		}
		c := adm.FindGroupCoordinators(ctx, shareGroup)[shareGroup]
		if c.Err != nil {
			t.Fatalf("the share group's coordinator: %v", c.Err)
		}
		return c.NodeID
	}
}

// checkShareReset resets the share group to earliest on the console of
// node snode, which does not coordinate it: the dry run shows each
// partition's start offset and its new one and moves nothing, the
// confirmation moves them (DescribeShareGroupOffsets).
func checkShareReset(t *testing.T, ctx context.Context, adm *kadm.Client, snode *broker.Node, b browser) {
	sbase := "http://" + snode.AdminAddr()
	b.show(sbase, "", "cluster")
	b.show(sbase, "#/group/"+shareGroup, "group")
	b.click(t, "#reset-preview")
	b.wait(t, "#reset-apply")
	b.snap(t, "share-reset")
	row := fmt.Sprintf("#reset-plan tr[data-partition='%s-0'] td", shareTopic)
	if old, nw := b.text(row+":nth-child(3)"), b.text(row+".new"); old != fmt.Sprint(sharePer) || nw != "0" {
		t.Fatalf("share reset dry run: partition 0 from %s to %s; want from %d to 0", old, nw, sharePer)
	}
	if s := shareStartOffsets(ctx, adm); s[0] != sharePer {
		t.Fatalf("after the share reset's dry run: start offsets %v, want %d still", s, sharePer)
	}
	b.click(t, "#reset-apply")
	b.wait(t, "#action-result.ok")
	if got := b.text("#action-result"); !strings.HasPrefix(got, "Start offsets of "+shareGroup+" reset") {
		t.Fatalf("share reset: the page shows %q", got)
	}
	if s := shareStartOffsets(ctx, adm); len(s) != 3 || s[0] != 0 || s[1] != 0 || s[2] != 0 {
		t.Fatalf("after the console's share reset: start offsets %v, want 0", s)
	}
}
