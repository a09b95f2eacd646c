package share

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/kafka"
)

// oneTopic is a cluster where this node coordinates every group and topic
// "jobs" has two partitions.
type oneTopic struct{}

func (oneTopic) IsCoordinator(string) bool { return true }
func (oneTopic) Topic(name string) (TopicMeta, bool) {
	if name == "jobs" {
		return TopicMeta{ID: [16]byte{7}, Partitions: 2}, true
	}
	return TopicMeta{}, false
}

// memLog is a MembershipLog in memory: the live record per key, and a
// switch that makes appends fail.
type memLog struct {
	mu   sync.Mutex
	live map[string][]byte
	fail error
}

func (l *memLog) Append(_ context.Context, _ string, recs []LogRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	for _, r := range recs {
		if r.Value == nil {
			delete(l.live, string(r.Key))
		} else {
			l.live[string(r.Key)] = r.Value
		}
	}
	return nil
}
func (l *memLog) Ready(string) error        { return nil }
func (l *memLog) PartitionFor(string) int32 { return 0 }
func (l *memLog) records() map[string][]LogRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var recs []LogRecord
	for k, v := range l.live {
		recs = append(recs, LogRecord{Key: []byte(k), Value: v})
	}
	return map[string][]LogRecord{"sg": recs}
}

func newLoggedCoordinator(t *testing.T, l *memLog) *Coordinator {
	c := NewCoordinator(Config{}, oneTopic{}, nil)
	t.Cleanup(c.Close)
	c.SetMembershipLog(l)
	return c
}

func heartbeat(t *testing.T, c *Coordinator, member string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version, req.GroupID, req.MemberID, req.MemberEpoch = 1, "sg", member, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{"jobs"}
	}
	reply, err := c.handleShareGroupHeartbeat(context.Background(), &kafka.Request{Msg: req, Version: 1, ClientID: "cl"})
	if err != nil {
		t.Fatal(err)
	}
	return reply.Response.(*kmsg.ShareGroupHeartbeatResponse)
}

// A membership change is answered only once the log took it (a failed
// append changes nothing); a coordinator that loads the log's records has
// the group at its epoch, members heartbeat on at theirs, and a leave is
// a tombstone. No per-group lock outlives the changes.
func TestMembershipThroughLog(t *testing.T) {
	l := &memLog{live: map[string][]byte{}}
	c := newLoggedCoordinator(t, l)
	if r := heartbeat(t, c, "a", 0); r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil {
		t.Fatalf("a joins: %+v", r)
	}
	l.fail = errors.New("disk on fire")
	if r := heartbeat(t, c, "b", 0); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("b joins while the log fails: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if g, _ := c.Group("sg"); g.Epoch != 1 || len(g.Members) != 1 {
		t.Fatalf("a failed append changed the group: %+v", g)
	}
	l.fail = nil
	if r := heartbeat(t, c, "b", 0); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("b joins: %+v", r)
	}
	if r := heartbeat(t, c, "a", 1); r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment != nil {
		t.Fatalf("a heartbeats: %+v", r)
	}

	c2 := newLoggedCoordinator(t, l)
	c2.LoadGroups(0, l.records())
	for _, m := range []struct {
		id    string
		epoch int32
	}{{"a", 1}, {"b", 2}} {
		if r := heartbeat(t, c2, m.id, m.epoch); r.ErrorCode != 0 || r.MemberEpoch != m.epoch {
			t.Fatalf("%s at the new coordinator: %v %+v", m.id, kerr.ErrorForCode(r.ErrorCode), r)
		}
	}
	g, _ := c2.Group("sg")
	if g.Epoch != 2 || len(g.Members) != 2 || len(g.Members[0].Assignment["jobs"]) != 2 {
		t.Fatalf("loaded group: %+v", g)
	}
	if r := heartbeat(t, c2, "a", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("a leaves: %+v", r)
	}
	c3 := newLoggedCoordinator(t, l)
	c3.LoadGroups(0, l.records())
	if g, _ := c3.Group("sg"); g.Epoch != 3 || len(g.Members) != 1 || g.Members[0].ID != "b" {
		t.Fatalf("after a left: %+v", g)
	}
	c3.UnloadGroups(0)
	if c3.Has("sg") {
		t.Fatal("an unloaded partition's group is still here")
	}
	for _, co := range []*Coordinator{c, c2} {
		co.mu.Lock()
		n := len(co.mu.writing)
		co.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d group write locks left", n)
		}
	}
}
