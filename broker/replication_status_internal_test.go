package broker

import (
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/replica"
	"github.com/shale-io/shale/segment/batch"
)

func openStatusReplica(t *testing.T, topic string, p int32) *partition.Replica {
	t.Helper()
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: topic, Partition: p,
		Config: config.ResolveTopic(nil, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Close() })
	return rep
}

// TestReplicationStatusOf covers what a live cluster rarely shows: a
// follower the leader has not heard from, a follower whose leader is
// unknown and that no fetcher holds, the topic filter, and the JSON shape.
func TestReplicationStatusOf(t *testing.T) {
	lead := openStatusReplica(t, "b-topic", 0)
	lead.SetLeadership(true, 4)
	lead.SetAssignment(1, []int32{1, 2, 3}, []int32{1, 2})
	for range 3 {
		b, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lead.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	if _, err := lead.FollowerFetch(2, 1, -1, now.Add(-1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	orphan := openStatusReplica(t, "a-topic", 7) // a follower of an unknown leader
	orphan.SetLeadership(false, 2)
	fetched := openStatusReplica(t, "a-topic", 1)
	fetched.SetLeadership(false, 2)
	fetchers := []replica.FetcherStatus{{Leader: 5, Index: 1, Partitions: []string{"a-topic-1"}, Fetches: 9,
		MaxWaitMillis: 500, MinBytes: 1, MaxBytes: 10 << 20, PartitionMaxBytes: 1 << 20}}
	leaderOf := func(topic string, p int32) int32 {
		if topic == "a-topic" && p == 1 {
			return 5
		}
		return -1
	}
	st := replicationStatusOf(1, []*partition.Replica{lead, orphan, fetched}, leaderOf, fetchers, "", now)
	if len(st.Partitions) != 3 || st.Partitions[0].Partition != 1 || st.Partitions[1].Partition != 7 || st.Partitions[2].Topic != "b-topic" {
		t.Fatalf("order: %+v", st.Partitions)
	}
	ps := st.Partitions[2]
	if ps.Role != adminapi.RoleLeader || ps.Leader != 1 || ps.LeaderEpoch != 4 || ps.LogEndOffset != 3 || !ps.UnderReplicated ||
		!slices.Equal(ps.ISR, []int32{1, 2}) || len(ps.Followers) != 2 {
		t.Fatalf("leader: %+v", ps)
	}
	heard, silent := ps.Followers[0], ps.Followers[1]
	// An ISR member counts as caught up at the election (Kafka's makeLeader).
	sinceElection := now.Sub(lead.Status().LeaderSince).Milliseconds()
	if heard != (adminapi.FollowerReplicationStatus{ID: 2, LogEndOffset: 1, LagRecords: 2, InISR: true, LastFetchMsAgo: 1500, LastCaughtUpMsAgo: sinceElection}) {
		t.Fatalf("follower 2: %+v", heard)
	}
	if silent != (adminapi.FollowerReplicationStatus{ID: 3, LogEndOffset: -1, LagRecords: -1, LastFetchMsAgo: -1, LastCaughtUpMsAgo: -1}) || !silent.Lagging(1000) {
		t.Fatalf("follower 3: %+v", silent)
	}
	if f := st.Partitions[0]; f.Role != adminapi.RoleFollower || f.Leader != 5 || f.FetchingFrom != 5 || f.FetcherIndex != 1 || f.Followers != nil {
		t.Fatalf("fetched follower: %+v", f)
	}
	if o := st.Partitions[1]; o.Leader != -1 || o.FetchingFrom != -1 || o.FetcherIndex != -1 || o.UnderReplicated || o.UnderReplicatedOrLagging(0) {
		t.Fatalf("orphan follower: %+v", o)
	}
	if len(st.Fetchers) != 1 || st.Fetchers[0].Fetches != 9 || st.Fetchers[0].MaxWaitMs != 500 || st.Fetchers[0].Partitions[0] != "a-topic-1" {
		t.Fatalf("fetchers: %+v", st.Fetchers)
	}
	if got := replicationStatusOf(1, []*partition.Replica{lead, orphan}, nil, nil, "a-topic", now); len(got.Partitions) != 1 || got.Partitions[0].Partition != 7 {
		t.Fatalf("topic filter: %+v", got)
	}
	// Empty lists are JSON arrays, never null.
	b, err := json.Marshal(replicationStatusOf(3, []*partition.Replica{orphan}, nil, nil, "none", now))
	if err != nil || string(b) != `{"node_id":3,"partitions":[],"fetchers":[]}` {
		t.Fatalf("empty status JSON: %s %v", b, err)
	}
	b, _ = json.Marshal(st.Partitions[1])
	if !strings.Contains(string(b), `"replicas":[],"isr":[]`) || strings.Contains(string(b), "followers") {
		t.Fatalf("follower JSON: %s", b)
	}
}
