package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testnode"
)

// replicationRun runs `shale replication status ARGS` in-process.
func replicationRun(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = run(append([]string{"replication", "status"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// pollCLI runs the command until check accepts its JSON output, failing
// the test at the deadline.
func pollCLI(t *testing.T, what string, check func([]adminapi.ReplicationStatus) bool, args ...string) []adminapi.ReplicationStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		out, errOut, code := replicationRun(append(args, "--json")...)
		var sts []adminapi.ReplicationStatus
		if code == 0 && json.Unmarshal([]byte(out), &sts) == nil && check(sts) {
			return sts
		}
		last = out + errOut
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached; last output:\n%s", what, last)
		}
		<-tick.C
	}
}

func findPartition(st adminapi.ReplicationStatus, topic string) (adminapi.PartitionReplicationStatus, bool) {
	for _, p := range st.Partitions {
		if p.Topic == topic {
			return p, true
		}
	}
	return adminapi.PartitionReplicationStatus{}, false
}

// TestReplicationStatusCommand runs the command against a real 3-node
// cluster: the JSON of all three nodes, the tables, the topic filter, and
// --under-replicated before and after a follower stops.
func TestReplicationStatusCommand(t *testing.T) {
	lag := func(c *config.Broker) { c.ReplicaLagTimeMax = 2 * time.Second }
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithSession(2*time.Second), lag)
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].KafkaAddr()), kgo.DefaultProduceTopic("rs"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, 90*time.Second)
	adm := kadm.NewClient(cl)
	var m kadm.Metadata
	for {
		if m, err = adm.Metadata(ctx); err == nil && len(m.Brokers) == 3 && m.Controller > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("3 brokers: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "rs"); err != nil || r.Err != nil {
		t.Fatalf("create rs: %v %v", err, r.Err)
	}
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "solo"); err != nil || r.Err != nil {
		t.Fatalf("create solo: %v %v", err, r.Err)
	}
	recs := make([]*kgo.Record, 20)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte("v")}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	addrs := []string{nodes[0].AdminAddr() + "," + nodes[1].AdminAddr(), "http://" + nodes[2].AdminAddr()}
	nodeArgs := []string{"--node", addrs[0], "--node", addrs[1]}

	// Every node reports rs-0 at 20/20; its leader shows two followers there.
	var leaderID int32
	sts := pollCLI(t, "rs-0 replicated on every node", func(sts []adminapi.ReplicationStatus) bool {
		if len(sts) != 3 {
			return false
		}
		leaders := 0
		for _, st := range sts {
			p, ok := findPartition(st, "rs")
			if !ok || p.LogEndOffset != 20 || p.HighWatermark != 20 || len(p.ISR) != 3 {
				return false
			}
			if p.Role == adminapi.RoleLeader {
				leaders++
				leaderID = st.NodeID
				for _, f := range p.Followers {
					if f.LagRecords != 0 || f.LogEndOffset != 20 {
						return false
					}
				}
			}
		}
		return leaders == 1
	}, nodeArgs...)
	for i, st := range sts {
		if st.NodeID != int32(i+1) {
			t.Fatalf("statuses out of --node order: %+v", sts)
		}
		p, _ := findPartition(st, "rs")
		if p.Role == adminapi.RoleFollower && (p.Leader != leaderID || p.FetchingFrom != leaderID) {
			t.Fatalf("node %d follows %d from %d, want %d", st.NodeID, p.Leader, p.FetchingFrom, leaderID)
		}
	}

	// The tables, for one topic: rs-0's line on every node, the leader's two
	// followers, the fetchers of the two followers; solo's not at all.
	out, errOut, code := replicationRun(append(nodeArgs, "--topic", "rs")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sections := strings.Split(strings.TrimSpace(out), "\n\n")
	if len(sections) != 3 || strings.Contains(out, "solo") {
		t.Fatalf("text output:\n%s", out)
	}
	replicas, followers, fetchers := strings.Split(sections[0], "\n"), strings.Split(sections[1], "\n"), strings.Split(sections[2], "\n")
	if len(replicas) != 4 || !strings.HasPrefix(replicas[0], "NODE ") || len(followers) != 3 || !strings.HasPrefix(followers[0], "LEADER ") ||
		len(fetchers) != 3 || !strings.HasPrefix(fetchers[0], "NODE ") {
		t.Fatalf("text output:\n%s", out)
	}
	for _, line := range replicas[1:] {
		f := strings.Fields(line)
		if len(f) != 13 || f[1] != "rs" || f[6] != "0" || f[7] != "20" || f[8] != "20" || strings.Count(f[9], ",") != 2 ||
			strings.Count(f[10], ",") != 2 || f[11] != "false" {
			t.Fatalf("replica line %q in:\n%s", line, out)
		}
	}
	for _, line := range followers[1:] {
		if f := strings.Fields(line); len(f) < 9 || f[0] != fmt.Sprint(leaderID) || f[4] != "20" || f[5] != "0" || f[6] != "true" {
			t.Fatalf("follower line %q in:\n%s", line, out)
		}
	}

	// Healthy: --under-replicated lists nothing.
	got := pollCLI(t, "nothing under-replicated", func(sts []adminapi.ReplicationStatus) bool {
		for _, st := range sts {
			if len(st.Partitions) != 0 || len(st.Fetchers) != 0 {
				return false
			}
		}
		return len(sts) == 3
	}, append(nodeArgs, "--under-replicated")...)
	if len(got) != 3 {
		t.Fatal(got)
	}

	// Stop a follower that is not the controller; the leader and the other
	// follower then list rs-0 (ISR 2 of 3), and never solo.
	victim := int32(0)
	for id := int32(1); id <= 3; id++ {
		if id != leaderID && id != m.Controller {
			victim = id
			break
		}
	}
	if err := nodes[victim-1].Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs[:5]...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var live []string
	for i, n := range nodes {
		if int32(i+1) != victim {
			live = append(live, "--node", n.AdminAddr())
		}
	}
	got = pollCLI(t, "rs-0 under-replicated", func(sts []adminapi.ReplicationStatus) bool {
		for _, st := range sts {
			if len(st.Partitions) != 1 || st.Partitions[0].Topic != "rs" || len(st.Partitions[0].ISR) != 2 {
				return false
			}
		}
		return len(sts) == 2
	}, append(live, "--under-replicated")...)
	for _, st := range got {
		if p := st.Partitions[0]; p.Role == adminapi.RoleLeader {
			for _, f := range p.Followers {
				if f.ID == victim && (f.LagRecords != 5 || f.InISR) {
					t.Fatalf("stopped follower on the leader: %+v", f)
				}
			}
		}
	}
	out, _, code = replicationRun(append(live, "--under-replicated", "--topic", "rs")...)
	if code != 0 || strings.Contains(out, "SOURCE") {
		t.Fatalf("exit %d, under-replicated table:\n%s", code, out)
	}
	for _, line := range strings.Split(strings.Split(strings.TrimSpace(out), "\n\n")[0], "\n")[1:] {
		if f := strings.Fields(line); len(f) != 13 || f[1] != "rs" || f[11] != "true" {
			t.Fatalf("under-replicated line %q in:\n%s", line, out)
		}
	}
	// The stopped node: an error on stderr and exit 1, the others printed.
	out, errOut, code = replicationRun(append(live, "--node", nodes[victim-1].AdminAddr(), "--json")...)
	var partial []adminapi.ReplicationStatus
	if code != 1 || !strings.Contains(errOut, nodes[victim-1].AdminAddr()) || json.Unmarshal([]byte(out), &partial) != nil || len(partial) != 2 {
		t.Fatalf("with a stopped node: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}

// TestReplicationStatusBadAnswers: what is not our server's status is an
// error (exit 1), never a crash; bad command lines exit 2.
func TestReplicationStatusBadAnswers(t *testing.T) {
	bodies := map[string]string{
		"/garbage":   "\x00\xffnot json",
		"/array":     `[1,2,3]`,
		"/empty":     `{}`,
		"/role":      `{"node_id":1,"partitions":[{"topic":"t","partition":0,"role":"boss"}],"fetchers":[]}`,
		"/types":     `{"node_id":"one","partitions":[]}`,
		"/truncated": `{"node_id":1,"partitions":[{"topic":"t"`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prefix := strings.TrimSuffix(r.URL.Path, adminapi.ReplicationStatusPath)
		if prefix == "/status500" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(bodies[prefix]))
	}))
	defer srv.Close()
	for _, path := range []string{"/garbage", "/array", "/empty", "/role", "/types", "/truncated", "/status500"} {
		out, errOut, code := replicationRun("--node", srv.URL+path)
		if code != 1 || out != "" || !strings.Contains(errOut, path) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", path, code, out, errOut)
		}
	}
	if _, err := adminapi.DecodeReplicationStatus(strings.NewReader(bodies["/role"])); !errors.Is(err, adminapi.ErrBadBody) {
		t.Errorf("bad role: %v", err)
	}
	good := `{"node_id":4,"partitions":[{"topic":"t","partition":0,"role":"follower","leader":-1,"fetching_from":-1,"replicas":[4],"isr":[4]}],"fetchers":[]}`
	if st, err := adminapi.DecodeReplicationStatus(strings.NewReader(good)); err != nil || st.NodeID != 4 || st.Partitions[0].Leader != -1 {
		t.Errorf("good body: %+v %v", st, err)
	}
	for _, args := range [][]string{{"--output", "yaml"}, {"--max-lag", "-1"}, {"extra"}, {"--nope"}} {
		if _, _, code := replicationRun(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"replication", "nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
		t.Errorf("bad verb: exit %d %q", code, errb.String())
	}
}

// FuzzDecodeReplicationStatus: any body decodes to a status or an error.
func FuzzDecodeReplicationStatus(f *testing.F) {
	f.Add([]byte(`{"node_id":1,"partitions":[],"fetchers":[]}`))
	f.Add([]byte(`{"node_id":1,"partitions":[{"role":"leader","followers":[{"id":2}]}]}`))
	f.Add([]byte(`{"partitions":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := adminapi.DecodeReplicationStatus(bytes.NewReader(b))
		if err == nil {
			filterReplicationStatus(st, "t", true, 0)
			writeReplicationStatus(&bytes.Buffer{}, []adminapi.ReplicationStatus{st})
		}
	})
}

func TestFetcherHoldsTopic(t *testing.T) {
	f := adminapi.FetcherReplicationStatus{Partitions: []string{"a-b-1", "events-12"}}
	for topic, want := range map[string]bool{"a-b": true, "a": false, "events": true, "event": false, "events-1": false} {
		if got := fetcherHoldsTopic(f, topic); got != want {
			t.Errorf("topic %q: %v, want %v", topic, got, want)
		}
	}
}

// TestReplicationStatusShowsFailingFetchers: a fetcher the leader refuses
// gets a line of its own under the table; a fetching one none.
func TestReplicationStatusShowsFailingFetchers(t *testing.T) {
	st := adminapi.ReplicationStatus{NodeID: 3, Partitions: []adminapi.PartitionReplicationStatus{}, Fetchers: []adminapi.FetcherReplicationStatus{
		{Leader: 1, Index: 0, Partitions: []string{"t-0"}, Fetches: 5},
		{Leader: 2, Index: 0, Partitions: []string{"t-1"}, ConsecutiveFailures: 12, Error: "inter-broker SASL authentication failed with 127.0.0.1:9094"},
	}}
	var out bytes.Buffer
	writeReplicationStatus(&out, []adminapi.ReplicationStatus{st})
	want := "node 3 fetcher 0 from node 2 failing (12 in a row): inter-broker SASL authentication failed with 127.0.0.1:9094\n"
	if !strings.HasSuffix(out.String(), want) || strings.Count(out.String(), "failing") != 1 {
		t.Fatalf("output:\n%s\nwant it to end with %q and name one failing fetcher", out.String(), want)
	}
}

// TestStatusVerbsOverHTTPSWithToken: the status verbs reach an admin
// listener that serves HTTPS with bearer tokens, given --admin-ca and
// --admin-token-file; without the token the node answers 401 and the verb
// fails.
func TestStatusVerbsOverHTTPSWithToken(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "admin-ca")
	cert, key := ca.Server(t, "node")
	caFile := testcerts.Write(t, dir, "ca.pem", ca.CertPEM)
	tokenFile := testcerts.Write(t, dir, "token", []byte("cli-token-0123456789abcdef\n"))
	n := testnode.Start(t, filepath.Join(dir, "node"), func(c *config.Broker) {
		c.AdminSSLCertificateLocation = testcerts.Write(t, dir, "admin.crt", cert)
		c.AdminSSLKeyLocation = testcerts.Write(t, dir, "admin.key", key)
		c.AdminAuthTokensFile = tokenFile
	})
	out, errOut, code := replicationRun("--admin", n.AdminAddr(), "--admin-ca", caFile, "--admin-token-file", tokenFile, "--json")
	var sts []adminapi.ReplicationStatus
	if code != 0 || json.Unmarshal([]byte(out), &sts) != nil || len(sts) != 1 {
		t.Fatalf("replication status over HTTPS with a token: exit %d\n%s%s", code, out, errOut)
	}
	var tout, terr bytes.Buffer
	if code := run([]string{"tier", "status", "--admin", n.AdminAddr(), "--admin-ca", caFile, "--admin-token-file", tokenFile, "--output", "json"},
		&tout, &terr); code != 0 {
		t.Fatalf("tier status over HTTPS with a token: exit %d\n%s%s", code, tout.String(), terr.String())
	}
	if _, errOut, code := replicationRun("--admin", n.AdminAddr(), "--admin-ca", caFile, "--json"); code == 0 || !strings.Contains(errOut, "401") {
		t.Fatalf("without the token: exit %d, stderr %q; want a failure naming 401", code, errOut)
	}
}
