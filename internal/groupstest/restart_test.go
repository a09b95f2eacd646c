package groupstest

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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
// accepted records; all three nodes stop and start again; `shale group
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
