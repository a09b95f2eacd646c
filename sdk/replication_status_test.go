package sdk_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shale-io/shale/sdk"
)

// TestReplicationStatus reads the test node's replication status after a
// produce, then checks the errors: no URL, a wrong path, bodies that are
// not a status, a closed admin.
func TestReplicationStatus(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, a, "repl-status", 1, nil)
	p := newProducer(t)
	for range 5 {
		if err := p.SendSync(ctx, &sdk.Record{Topic: "repl-status", Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.ReplicationStatus(ctx, "repl-status")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Partitions) != 1 || st.Fetchers == nil || len(st.Fetchers) != 0 {
		t.Fatalf("status %+v", st)
	}
	ps := st.Partitions[0]
	if ps.Topic != "repl-status" || ps.Role != sdk.RoleLeader || ps.Leader != st.NodeID || ps.LogEndOffset != 5 ||
		ps.HighWatermark != 5 || len(ps.Replicas) != 1 || len(ps.ISR) != 1 || len(ps.Followers) != 0 ||
		ps.UnderReplicatedOrLagging(0) || ps.FetchingFrom != -1 {
		t.Fatalf("partition %+v", ps)
	}
	if other, err := a.ReplicationStatus(ctx, "no-such-topic"); err != nil || len(other.Partitions) != 0 {
		t.Fatalf("topic filter: %+v %v", other, err)
	}

	noURL, err := sdk.NewAdmin(sdk.WithSeeds(seed))
	if err != nil {
		t.Fatal(err)
	}
	defer noURL.Close()
	if _, err := noURL.ReplicationStatus(ctx, ""); !errors.Is(err, sdk.ErrNoAdminURL) {
		t.Fatalf("no admin URL: %v", err)
	}
	bad, err := sdk.NewAdmin(sdk.WithSeeds(seed), sdk.WithAdminURL(adminURL+"/nowhere"))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.ReplicationStatus(ctx, ""); !errors.Is(err, sdk.ErrAdminHTTP) {
		t.Fatalf("wrong path: %v", err)
	}
	for _, body := range []string{"\x00garbage", `[]`, `{}`, `{"partitions":[{"partition":"x"}]}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
		g, err := sdk.NewAdmin(sdk.WithSeeds(seed), sdk.WithAdminURL(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := g.ReplicationStatus(ctx, ""); err == nil || errors.Is(err, sdk.ErrAdminHTTP) {
			t.Errorf("body %q: %+v, %v", body, st, err)
		}
		g.Close()
		srv.Close()
	}
	a.Close()
	if _, err := a.ReplicationStatus(ctx, ""); !errors.Is(err, sdk.ErrClosed) {
		t.Fatalf("closed admin: %v", err)
	}
}

func TestReplicationStatusLagging(t *testing.T) {
	caughtUp := sdk.FollowerReplicationStatus{ID: 2, LogEndOffset: 10, LagRecords: 0, InISR: true}
	behind := sdk.FollowerReplicationStatus{ID: 3, LogEndOffset: 7, LagRecords: 3, InISR: true}
	silent := sdk.FollowerReplicationStatus{ID: 4, LogEndOffset: -1, LagRecords: -1}
	if caughtUp.Lagging(0) || !behind.Lagging(2) || behind.Lagging(3) || !silent.Lagging(1<<40) {
		t.Fatal("Lagging")
	}
	p := sdk.PartitionReplicationStatus{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
		Followers: []sdk.FollowerReplicationStatus{caughtUp, behind}}
	if !p.UnderReplicatedOrLagging(2) || p.UnderReplicatedOrLagging(3) {
		t.Fatal("UnderReplicatedOrLagging by lag")
	}
	p.UnderReplicated = true
	if !p.UnderReplicatedOrLagging(3) {
		t.Fatal("UnderReplicatedOrLagging by ISR")
	}
}
