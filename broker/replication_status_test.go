package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
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

// getReplicationStatus GETs the node's replication status (query is "" or
// "?topic=..."); an error (never a test failure) when it cannot, so that it
// can be polled.
func getReplicationStatus(n *broker.Node, query string) (adminapi.ReplicationStatus, error) {
	var st adminapi.ReplicationStatus
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.AdminAddr()+broker.ReplicationStatusPath+query, nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		return st, fmt.Errorf("status %s, content type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// partitionStatus finds topic-p in st.
func partitionStatus(st adminapi.ReplicationStatus, topic string, p int32) (adminapi.PartitionReplicationStatus, bool) {
	for _, ps := range st.Partitions {
		if ps.Topic == topic && ps.Partition == p {
			return ps, true
		}
	}
	return adminapi.PartitionReplicationStatus{}, false
}

// TestReplicationStatusEndpoint: on a 3-node cluster with an RF=3 topic,
// the leader's status shows both followers at its log end and the high
// watermark there, each follower shows the leader it fetches from and its
// fetcher; once a follower stops and more records arrive, the leader shows
// its lag in records, the ISR shrunk and the partition under-replicated.
func TestReplicationStatusEndpoint(t *testing.T) {
	lag := func(c *config.Broker) { c.ReplicaLagTimeMax = 2 * time.Second }
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithSession(2*time.Second), lag)
	ctx := proctest.Context(t, 90*time.Second)
	adm := kadm.NewClient(testnode.Client(t, nodes[0].KafkaAddr()))
	proctest.Eventually(t, 20*time.Second, "3 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 3
	})
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "rs"); err != nil || r.Err != nil {
		t.Fatalf("create rs: %v %v", err, r.Err)
	}
	prod := testnode.Client(t, nodes[0].KafkaAddr(), kgo.DefaultProduceTopic("rs"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := prod.ProduceSync(ctx, testnode.Records("rs", 50, "a")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var m kadm.Metadata
	proctest.Eventually(t, 20*time.Second, "a leader and a controller", func() bool {
		var err error
		m, err = adm.Metadata(ctx, "rs")
		return err == nil && m.Controller > 0 && m.Topics["rs"].Partitions[0].Leader > 0
	})
	leaderID := m.Topics["rs"].Partitions[0].Leader
	leader := nodes[leaderID-1]

	// The leader: both followers at its log end, HW == LEO == 50.
	var ls adminapi.PartitionReplicationStatus
	proctest.Eventually(t, 20*time.Second, "followers caught up on the leader", func() bool {
		st, err := getReplicationStatus(leader, "")
		if err != nil || st.NodeID != leaderID {
			return false
		}
		ps, ok := partitionStatus(st, "rs", 0)
		if !ok || len(ps.Followers) != 2 {
			return false
		}
		for _, f := range ps.Followers {
			if f.LogEndOffset != 50 || f.LagRecords != 0 || !f.InISR {
				return false
			}
		}
		ls = ps
		return ps.LogEndOffset == 50 && ps.HighWatermark == 50
	})
	if ls.Role != adminapi.RoleLeader || ls.Leader != leaderID || ls.LeaderEpoch < 0 || ls.LogStartOffset != 0 ||
		len(ls.Replicas) != 3 || len(ls.ISR) != 3 || ls.UnderReplicated || ls.UnderReplicatedOrLagging(0) ||
		ls.FetchingFrom != -1 || ls.FetcherIndex != -1 {
		t.Fatalf("leader's line: %+v", ls)
	}
	for _, f := range ls.Followers {
		if f.ID == leaderID || !slices.Contains(ls.Replicas, f.ID) || f.LastFetchMsAgo < 0 || f.LastCaughtUpMsAgo < 0 {
			t.Fatalf("follower on the leader: %+v", f)
		}
	}

	// Each follower: it fetches rs-0 from the leader, at the same offsets.
	for i, n := range nodes {
		if int32(i+1) == leaderID {
			continue
		}
		var fs adminapi.PartitionReplicationStatus
		var st adminapi.ReplicationStatus
		proctest.Eventually(t, 20*time.Second, fmt.Sprintf("node %d's view as a follower", i+1), func() bool {
			var err error
			st, err = getReplicationStatus(n, "?topic=rs")
			if err != nil {
				return false
			}
			var ok bool
			fs, ok = partitionStatus(st, "rs", 0)
			return ok && fs.LogEndOffset == 50 && fs.HighWatermark == 50
		})
		if fs.Role != adminapi.RoleFollower || fs.Leader != leaderID || fs.FetchingFrom != leaderID || fs.FetcherIndex != 0 ||
			len(fs.Followers) != 0 || fs.LeaderEpoch != ls.LeaderEpoch || len(fs.ISR) != 3 {
			t.Fatalf("node %d's line: %+v", i+1, fs)
		}
		found := false
		for _, f := range st.Fetchers {
			if f.Leader == leaderID && slices.Contains(f.Partitions, "rs-0") {
				found = f.Fetches > 0 && f.MaxWaitMs == 500 && f.PartitionMaxBytes == 1<<20
			}
		}
		if !found {
			t.Fatalf("node %d's fetchers: %+v", i+1, st.Fetchers)
		}
	}
	if st, err := getReplicationStatus(leader, "?topic=other"); err != nil || len(st.Partitions) != 0 {
		t.Fatalf("topic filter: %+v %v", st, err)
	}
	resp, err := http.Post("http://"+leader.AdminAddr()+broker.ReplicationStatusPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %s", resp.Status)
	}

	// Stop a follower (not the controller) and produce 30 more records: the
	// leader shows it 30 behind, out of the ISR, the partition under-replicated.
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
	prod2 := testnode.Client(t, leader.KafkaAddr(), kgo.DefaultProduceTopic("rs"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := prod2.ProduceSync(ctx, testnode.Records("rs", 30, "b")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var last adminapi.PartitionReplicationStatus
	proctest.Eventually(t, 30*time.Second, "the stopped follower lagging and out of the ISR", func() bool {
		st, err := getReplicationStatus(leader, "")
		if err != nil {
			return false
		}
		ps, ok := partitionStatus(st, "rs", 0)
		if !ok || ps.LogEndOffset != 80 || len(ps.ISR) != 2 || slices.Contains(ps.ISR, victim) {
			return false
		}
		last = ps
		return true
	})
	if !last.UnderReplicated || !last.UnderReplicatedOrLagging(0) || len(last.Followers) != 2 {
		t.Fatalf("after stopping node %d: %+v", victim, last)
	}
	for _, f := range last.Followers {
		if f.ID == victim && (f.LogEndOffset != 50 || f.LagRecords != 30 || f.InISR || !f.Lagging(29) || f.Lagging(30) ||
			f.LastCaughtUpMsAgo < 0) {
			t.Fatalf("stopped follower: %+v", f)
		}
		if f.ID != victim && !f.InISR {
			t.Fatalf("live follower left the ISR: %+v", f)
		}
	}
}
