package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestAdminRolesAndConsoleActions runs a node whose tokens file holds an
// admin token (no role: the old format) and a read-only one, and asks it
// with real HTTP: the read-only token reads (metrics, the console's JSON,
// its session says read) and is refused every write (the console's
// actions, a decommission) with 403 saying the token is read-only; the
// admin token runs the actions: a preferred election answers per
// partition, an offset reset of an inactive group commits what its dry run
// planned (checked with a Kafka client), and one of a group with a member
// is refused with 409 naming the group's state.
func TestAdminRolesAndConsoleActions(t *testing.T) {
	const adminTok, readTok = "admin-token-0123456789abcdef", "read-token-0123456789abcdef"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	writeRenamed(t, tokens, "# ops\n"+adminTok+"\n"+readTok+" read\n")
	n := testnode.Start(t, filepath.Join(dir, "node"), func(c *config.Broker) { c.AdminAuthTokensFile = tokens })
	ctx := proctest.Context(t, 90*time.Second)
	do := func(method, path, token string, body any) (int, string) {
		t.Helper()
		return consoleDoAs(t, ctx, n.AdminAddr(), token, method, path, body)
	}

	cl := testnode.Client(t, n.KafkaAddr())
	adm := kadm.NewClient(cl)
	const topic = "events"
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte("v")})
	}
	pcl := testnode.Client(t, n.KafkaAddr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 10, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 20, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "idle", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}

	// Reads: both tokens.
	for _, tok := range []string{adminTok, readTok} {
		for _, path := range []string{"/metrics", adminapi.ConsoleTopicsPath, "/console/"} {
			if code, body := do(http.MethodGet, path, tok, nil); code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
		}
	}
	for tok, want := range map[string]adminapi.ConsoleSession{adminTok: {Role: "admin", CanWrite: true}, readTok: {Role: "read"}} {
		code, body := do(http.MethodGet, adminapi.ConsoleSessionPath, tok, nil)
		var s adminapi.ConsoleSession
		if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil || s.Role != want.Role || s.CanWrite != want.CanWrite {
			t.Fatalf("session: %d %s; want role %s", code, body, want.Role)
		}
	}

	// Writes with the read-only token: 403, saying why; nothing changed.
	reset := adminapi.ConsoleResetRequest{Group: "idle", Topic: topic, To: "earliest"}
	for path, body := range map[string]any{
		adminapi.ConsoleElectPreferredPath: adminapi.ConsoleElectRequest{Topic: topic},
		adminapi.ConsoleRebalancePath:      adminapi.ConsoleRebalanceRequest{},
		adminapi.ConsoleResetOffsetsPath:   reset,
		adminapi.DecommissionPath:          adminapi.DrainRequest{Brokers: []int32{1}},
	} {
		if code, msg := do(http.MethodPost, path, readTok, body); code != http.StatusForbidden || !strings.Contains(msg, "read-only") {
			t.Fatalf("POST %s with the read-only token: %d %q; want 403 saying read-only", path, code, msg)
		}
	}
	fetched, err := adm.FetchOffsets(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup(topic, 0); o.At != 10 {
		t.Fatalf("after the refused reset: partition 0 at %d, want 10", o.At)
	}

	// Writes with the admin token.
	code, body := do(http.MethodPost, adminapi.ConsoleElectPreferredPath, adminTok, adminapi.ConsoleElectRequest{Topic: topic})
	var er adminapi.ConsoleElectResult
	if err := json.Unmarshal([]byte(body), &er); code != http.StatusOK || err != nil || len(er.Results) != 2 ||
		!strings.Contains(er.Results[0].Error, "ELECTION_NOT_NEEDED") {
		t.Fatalf("elect preferred: %d %s; want two partitions, ELECTION_NOT_NEEDED (one node leads)", code, body)
	}
	if code, body := do(http.MethodPost, adminapi.ConsoleElectPreferredPath, adminTok, adminapi.ConsoleElectRequest{Topic: "nope"}); code != http.StatusNotFound {
		t.Fatalf("elect preferred of a missing topic: %d %s", code, body)
	}
	reset.To, reset.Offset, reset.DryRun = "offset", 30, true
	code, body = do(http.MethodPost, adminapi.ConsoleResetOffsetsPath, adminTok, reset)
	var rr adminapi.ConsoleResetResult
	if err := json.Unmarshal([]byte(body), &rr); code != http.StatusOK || err != nil || !rr.DryRun || len(rr.Partitions) != 2 ||
		rr.Partitions[0].OldOffset != 10 || rr.Partitions[0].NewOffset != 30 || rr.Partitions[1].OldOffset != 20 || rr.Partitions[1].NewOffset != 30 {
		t.Fatalf("reset dry run: %d %s", code, body)
	}
	if fetched, err = adm.FetchOffsets(ctx, "idle"); err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup(topic, 0); o.At != 10 {
		t.Fatalf("after the dry run: partition 0 at %d, want 10", o.At)
	}
	reset.DryRun = false
	if code, body = do(http.MethodPost, adminapi.ConsoleResetOffsetsPath, adminTok, reset); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	if fetched, err = adm.FetchOffsets(ctx, "idle"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if o, _ := fetched.Lookup(topic, p); o.At != 30 {
			t.Fatalf("after the reset: partition %d at %d, want 30", p, o.At)
		}
	}

	// A group with a member: refused with its state.
	live := testnode.Client(t, n.KafkaAddr(), kgo.ConsumerGroup("live"), kgo.ConsumeTopics(topic))
	if err := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		d, err := adm.DescribeGroups(ctx, "live")
		return err == nil && d["live"].State == "Stable" && len(d["live"].Members) == 1
	}); err != nil {
		live.PollRecords(ctx, 1)
		t.Fatalf("the live group did not stabilise: %v", err)
	}
	code, body = do(http.MethodPost, adminapi.ConsoleResetOffsetsPath, adminTok, adminapi.ConsoleResetRequest{Group: "live", Topic: topic, To: "latest"})
	if code != http.StatusConflict || !strings.Contains(body, "Stable") || !strings.Contains(body, "1 members") {
		t.Fatalf("reset of a group with a member: %d %q; want 409 naming its state", code, body)
	}
}

// consoleDo sends method path with body (JSON) to the admin listener at
// addr, without a token, and returns the status and the body.
func consoleDo(t *testing.T, ctx context.Context, addr, method, path string, body any) (int, string) {
	t.Helper()
	return consoleDoAs(t, ctx, addr, "", method, path, body)
}

// consoleDoAs is consoleDo with token as the bearer token ("": none).
func consoleDoAs(t *testing.T, ctx context.Context, addr, token, method, path string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// consoleGet GETs path from the admin listener at addr and decodes it.
func consoleGet[T any](t *testing.T, ctx context.Context, addr, path string) T {
	t.Helper()
	code, body := consoleDo(t, ctx, addr, http.MethodGet, path, nil)
	var v T
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	return v
}

// TestConsoleGroupsClusterWideAndShareReset runs three nodes and asks each
// console's JSON by real HTTP: the groups page of a node lists the whole
// cluster's groups, a KIP-932 share group (type share, its start offsets)
// and a consumer group coordinated by other nodes, in pages; a share
// group's reset from a node that does not coordinate it is planned (the
// dry run moves nothing) and done by AlterShareGroupOffsets (checked with
// DescribeShareGroupOffsets), and refused with 409 naming its state while
// it has a member; a consumer group's reset from a node that does not
// coordinate it commits (checked with OffsetFetch).
func TestConsoleGroupsClusterWideAndShareReset(t *testing.T) {
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, func(c *config.Broker) { c.ShareAutoOffsetReset = "earliest" })
	ctx := proctest.Context(t, 2*time.Minute)
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.KafkaAddr()
	}
	cl := testnode.Client(t, addrs[0])
	adm := kadm.NewClient(cl)
	const topic, shareGroup, idle = "jobs", "workers", "idle"
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	testnode.ProduceN(t, addrs[0], topic, 30, "j") // 10 per partition

	// The share group consumes everything, accepting each record, then
	// its member leaves: every start offset is 10.
	startOffsets := func() map[int32]int64 { return testnode.ShareStartOffsets(ctx, adm, shareGroup, topic) }
	member := testnode.StartShareAcceptor(t, addrs[1], shareGroup, topic)
	if err := proctest.Poll(60*time.Second, 100*time.Millisecond, func() bool {
		s := startOffsets()
		return len(s) == 3 && s[0] == 10 && s[1] == 10 && s[2] == 10
	}); err != nil {
		member.Stop()
		t.Fatalf("the share group never consumed the 30 records: %v", startOffsets())
	}
	member.Stop()
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		d, err := adm.DescribeShareGroups(ctx, shareGroup)
		return err == nil && d[shareGroup].GroupState == "Empty"
	}); err != nil {
		t.Fatalf("the share group's member never left: %v", err)
	}
	offs := kadm.Offsets{}
	for p := range int32(3) {
		offs.Add(kadm.Offset{Topic: topic, Partition: p, At: 4, LeaderEpoch: -1})
	}
	if r, err := adm.CommitOffsets(ctx, idle, offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}

	coords := adm.FindGroupCoordinators(ctx, shareGroup, idle)
	type node struct {
		*broker.Node
		id int32
	}
	other := func(group string) node { // a node that does not coordinate group (ids 1..3)
		c, ok := coords[group]
		if !ok || c.Err != nil {
			t.Fatalf("coordinator of %s: %+v", group, c)
		}
		i := int(c.NodeID) % len(nodes) // the next node's index
		return node{nodes[i], int32(i + 1)}
	}
	sn := other(shareGroup)

	// The groups page of a node that does not coordinate the share group.
	gs := consoleGet[adminapi.ConsoleGroups](t, ctx, sn.AdminAddr(), adminapi.ConsoleGroupsPath)
	byName := map[string]adminapi.ConsoleGroup{}
	for _, g := range gs.Groups {
		byName[g.Group] = g
	}
	sg, ig := byName[shareGroup], byName[idle]
	if gs.Total != 2 || len(gs.Groups) != 2 || sg.Type != "share" || sg.State != "Empty" || sg.Coordinator != coords[shareGroup].NodeID ||
		sg.Partitions != 3 || sg.Members != 0 {
		t.Fatalf("node %d's groups page: %+v; want %s (share, Empty, coordinated by %d, 3 partitions) and %s", sn.id, gs, shareGroup,
			coords[shareGroup].NodeID, idle)
	}
	if ig.Coordinator != coords[idle].NodeID || ig.Lag != 3*(10-4) || ig.LagUnknown != 0 || ig.Partitions != 3 {
		t.Fatalf("node %d's groups page: %s is %+v; want coordinated by %d with lag 18", sn.id, idle, ig, coords[idle].NodeID)
	}
	// Paged: one group a page, the cursor goes on.
	p1 := consoleGet[adminapi.ConsoleGroups](t, ctx, sn.AdminAddr(), adminapi.ConsoleGroupsPath+"?limit=1")
	p2 := consoleGet[adminapi.ConsoleGroups](t, ctx, sn.AdminAddr(), adminapi.ConsoleGroupsPath+"?limit=1&cursor="+p1.Next)
	if len(p1.Groups) != 1 || p1.Groups[0].Group != idle || p1.Next != idle || len(p2.Groups) != 1 || p2.Groups[0].Group != shareGroup || p2.Next != "" {
		t.Fatalf("group pages of 1: %+v then %+v", p1, p2)
	}
	// The share group's page: each partition's start offset.
	gd := consoleGet[adminapi.ConsoleGroupDetail](t, ctx, sn.AdminAddr(), adminapi.ConsoleGroupPath+"?group="+shareGroup)
	if gd.Group.Type != "share" || len(gd.Partitions) != 3 || len(gd.Topics) != 1 || gd.Topics[0] != topic {
		t.Fatalf("share group page: %+v", gd)
	}
	for _, p := range gd.Partitions {
		if p.Offset != 10 || p.End != 10 || (p.Lag != 0 && p.Lag != -1) {
			t.Fatalf("share group page: %s-%d at %d, end %d, lag %d; want 10, 10 and lag 0 (or unknown)", p.Topic, p.Partition, p.Offset, p.End, p.Lag)
		}
	}
	gd2 := consoleGet[adminapi.ConsoleGroupDetail](t, ctx, sn.AdminAddr(), adminapi.ConsoleGroupPath+"?group="+shareGroup+"&limit=2&cursor="+topic+"/0")
	if len(gd2.Partitions) != 2 || gd2.Partitions[0].Partition != 1 || gd2.Next != "" {
		t.Fatalf("share group page after %s/0: %+v", topic, gd2)
	}
	for path, want := range map[string]int{
		adminapi.ConsoleGroupPath + "?group=nope":                        http.StatusNotFound,
		adminapi.ConsoleGroupPath:                                        http.StatusBadRequest,
		adminapi.ConsoleGroupPath + "?group=" + shareGroup + "&cursor=x": http.StatusBadRequest,
		adminapi.ConsoleGroupsPath + "?limit=0":                          http.StatusBadRequest,
	} {
		if code, body := consoleDo(t, ctx, sn.AdminAddr(), http.MethodGet, path, nil); code != want {
			t.Fatalf("GET %s: %d %s, want %d", path, code, body, want)
		}
	}

	// The share group's reset from that node: the dry run moves nothing.
	reset := adminapi.ConsoleResetRequest{Group: shareGroup, Topic: topic, To: "offset", Offset: 3, DryRun: true}
	code, body := consoleDo(t, ctx, sn.AdminAddr(), http.MethodPost, adminapi.ConsoleResetOffsetsPath, reset)
	var rr adminapi.ConsoleResetResult
	if err := json.Unmarshal([]byte(body), &rr); code != http.StatusOK || err != nil || rr.Type != "share" || !rr.DryRun || len(rr.Partitions) != 3 ||
		rr.Partitions[0].OldOffset != 10 || rr.Partitions[0].NewOffset != 3 || rr.Partitions[0].Lag != 7 {
		t.Fatalf("share reset dry run: %d %s", code, body)
	}
	if s := startOffsets(); s[0] != 10 || s[1] != 10 || s[2] != 10 {
		t.Fatalf("after the share reset's dry run: start offsets %v, want 10 still", s)
	}
	reset.DryRun = false
	if code, body = consoleDo(t, ctx, sn.AdminAddr(), http.MethodPost, adminapi.ConsoleResetOffsetsPath, reset); code != http.StatusOK {
		t.Fatalf("share reset: %d %s", code, body)
	}
	if s := startOffsets(); s[0] != 3 || s[1] != 3 || s[2] != 3 {
		t.Fatalf("after the share reset: start offsets %v, want 3", s)
	}
	gd = consoleGet[adminapi.ConsoleGroupDetail](t, ctx, sn.AdminAddr(), adminapi.ConsoleGroupPath+"?group="+shareGroup)
	if len(gd.Partitions) != 3 || gd.Partitions[0].Offset != 3 {
		t.Fatalf("share group page after the reset: %+v", gd)
	}

	// With a member: refused, naming its state.
	defer testnode.StartShareAcceptor(t, addrs[1], shareGroup, topic).Stop()
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		d, err := adm.DescribeShareGroups(ctx, shareGroup)
		return err == nil && d[shareGroup].GroupState == "Stable" && len(d[shareGroup].Members) == 1
	}); err != nil {
		t.Fatalf("the share group's member never joined: %v", err)
	}
	code, body = consoleDo(t, ctx, sn.AdminAddr(), http.MethodPost, adminapi.ConsoleResetOffsetsPath,
		adminapi.ConsoleResetRequest{Group: shareGroup, Topic: topic, To: "earliest"})
	if code != http.StatusConflict || !strings.Contains(body, "Stable with 1 members") {
		t.Fatalf("share reset with a member: %d %q; want 409 naming its state", code, body)
	}

	// The consumer group's reset from a node that does not coordinate it.
	in := other(idle)
	code, body = consoleDo(t, ctx, in.AdminAddr(), http.MethodPost, adminapi.ConsoleResetOffsetsPath,
		adminapi.ConsoleResetRequest{Group: idle, Topic: topic, To: "latest"})
	if err := json.Unmarshal([]byte(body), &rr); code != http.StatusOK || err != nil || rr.Type != "consumer" {
		t.Fatalf("reset of %s from node %d (coordinator %d): %d %s", idle, in.id, coords[idle].NodeID, code, body)
	}
	fetched, err := adm.FetchOffsets(ctx, idle)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if o, _ := fetched.Lookup(topic, p); o.At != 10 {
			t.Fatalf("after the reset from node %d: %s-%d at %d, want 10", in.id, topic, p, o.At)
		}
	}
}
