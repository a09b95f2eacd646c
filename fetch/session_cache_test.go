package fetch

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// Incremental fetch sessions (KIP-227) over the handler, with raw kmsg
// requests: the session id and epoch rules, forgotten topics, and which
// partitions an incremental answer carries.

// hotReplica opens a leader replica of topic-p with n one-record batches.
func hotReplica(t testing.TB, topic string, p int32, n int) *partition.Replica {
	t.Helper()
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: topic, Partition: p,
		Config: config.ResolveTopic(nil, nil), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	rep.SetLeadership(true, 0)
	t.Cleanup(func() { rep.Close() })
	for range n {
		appendOne(t, rep)
	}
	return rep
}

func appendOne(t testing.TB, rep *partition.Replica) {
	t.Helper()
	b, err := batch.Build(nil, batch.NoProducer(), []batch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rep.AppendLeader(b); err != nil {
		t.Fatal(err)
	}
}

// sessReq is a consumer Fetch v12 of the session (id, epoch) naming parts
// ("topic-partition" -> fetch offset) and forgetting forget.
func sessReq(id, epoch int32, parts map[string]int64, forget ...string) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, -1, 0, 0, 1<<20
	req.SessionID, req.SessionEpoch = id, epoch
	byTopic := map[string]int{}
	for k, off := range parts {
		var topic string
		var p int32
		fmt.Sscanf(k, "%1s-%d", &topic, &p)
		i, ok := byTopic[topic]
		if !ok {
			req.Topics = append(req.Topics, kmsg.NewFetchRequestTopic())
			i = len(req.Topics) - 1
			req.Topics[i].Topic = topic
			byTopic[topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, off, 1<<20, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	for _, k := range forget {
		var topic string
		var p int32
		fmt.Sscanf(k, "%1s-%d", &topic, &p)
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = topic, []int32{p}
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// roundTrip runs req through h and decodes the answer.
func roundTrip(t *testing.T, h *fetchHandler, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	reply, err := h.handle(proctest.Context(t, 30*time.Second), &kafka.Request{Key: 1, Version: req.Version, Msg: req})
	if err != nil {
		t.Fatal(err)
	}
	return decodeBody(t, reply.Body.(*body), req.Version)
}

// answered lists the partitions of resp as "topic-partition" -> bytes.
func answered(resp *kmsg.FetchResponse) map[string]int {
	out := map[string]int{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)] = len(rp.RecordBatches)
		}
	}
	return out
}

func TestFetchSessionAnswersOnlyNews(t *testing.T) {
	reps := leaders{}
	for p := int32(0); p < 3; p++ {
		reps[fmt.Sprintf("a-%d", p)] = hotReplica(t, "a", p, 2)
	}
	reps["b-0"] = hotReplica(t, "b", 0, 2)
	cache := NewSessionCache(10)
	h := &fetchHandler{leaders: reps, log: quiet(), opts: buildOptions([]Option{WithSessionCache(cache)})}

	// A full fetch at epoch 0 opens a session and answers every partition.
	resp := roundTrip(t, h, sessReq(0, 0, map[string]int64{"a-0": 0, "a-1": 0, "a-2": 0, "b-0": 0}))
	id := resp.SessionID
	if resp.ErrorCode != 0 || id <= 0 {
		t.Fatalf("full fetch: error %d, session %d; want a session", resp.ErrorCode, id)
	}
	if got := answered(resp); len(got) != 4 || got["a-0"] == 0 || got["b-0"] == 0 {
		t.Fatalf("full fetch answered %v, want all four with records", got)
	}
	if st := cache.Stats(); st.Sessions != 1 || st.Partitions != 4 {
		t.Fatalf("stats %+v after one session of 4", st)
	}

	// Epoch 1 moves every offset to the end: nothing has news.
	resp = roundTrip(t, h, sessReq(id, 1, map[string]int64{"a-0": 2, "a-1": 2, "a-2": 2, "b-0": 2}))
	if resp.ErrorCode != 0 || resp.SessionID != id || len(answered(resp)) != 0 {
		t.Fatalf("epoch 1: error %d, session %d, answered %v; want session %d, nothing", resp.ErrorCode, resp.SessionID, answered(resp), id)
	}
	// Epoch 2 names nothing; a record lands on a-1: only a-1 is answered.
	appendOne(t, reps["a-1"])
	resp = roundTrip(t, h, sessReq(id, 2, nil))
	if got := answered(resp); resp.ErrorCode != 0 || len(got) != 1 || got["a-1"] == 0 {
		t.Fatalf("epoch 2: error %d, answered %v; want a-1 alone, with its record", resp.ErrorCode, got)
	}
	// The same epoch again: INVALID_FETCH_SESSION_EPOCH, no partitions.
	resp = roundTrip(t, h, sessReq(id, 2, nil))
	if resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || len(resp.Topics) != 0 || resp.SessionID != 0 {
		t.Fatalf("epoch 2 again: error %d, session %d, %d topics", resp.ErrorCode, resp.SessionID, len(resp.Topics))
	}
	// A session id the cache does not have: FETCH_SESSION_ID_NOT_FOUND.
	resp = roundTrip(t, h, sessReq(id+1, 3, nil))
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(resp.Topics) != 0 {
		t.Fatalf("unknown session: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
	}
	// The failed requests did not move the epoch; epoch 3 moves a-1 on and
	// forgets b-0: a record on b-0 is no longer sent, the log start moving
	// on a-2 (DeleteRecords) is.
	appendOne(t, reps["b-0"])
	if _, err := reps["a-2"].DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	resp = roundTrip(t, h, sessReq(id, 3, map[string]int64{"a-1": 3}, "b-0"))
	if got := answered(resp); resp.ErrorCode != 0 || len(got) != 1 || got["a-2"] != 0 {
		t.Fatalf("epoch 3: error %d, answered %v; want a-2 alone (log start), no records", resp.ErrorCode, got)
	}
	if p := resp.Topics[0].Partitions[0]; p.LogStartOffset != 1 {
		t.Fatalf("a-2 answered log start %d, want 1", p.LogStartOffset)
	}
	if st := cache.Stats(); st.Partitions != 3 {
		t.Fatalf("stats %+v after forgetting b-0, want 3 partitions", st)
	}

	// An error always has news, every time: a-0's leader goes away (the
	// node drops the replica and closes it, as replica.Manager does).
	reps["a-0"].Close()
	delete(reps, "a-0")
	for epoch := int32(4); epoch <= 5; epoch++ {
		resp = roundTrip(t, h, sessReq(id, epoch, nil))
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("epoch %d: answered %v, want a-0 with UNKNOWN_TOPIC_OR_PARTITION", epoch, answered(resp))
		}
	}

	// A full fetch at epoch -1 naming the session closes it, and is
	// answered in full without one.
	resp = roundTrip(t, h, sessReq(id, -1, map[string]int64{"a-1": 3}))
	if resp.ErrorCode != 0 || resp.SessionID != 0 || len(answered(resp)) != 1 {
		t.Fatalf("final fetch: error %d, session %d, answered %v", resp.ErrorCode, resp.SessionID, answered(resp))
	}
	if resp = roundTrip(t, h, sessReq(id, 6, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
	}
	if st := cache.Stats(); st.Sessions != 0 || st.Partitions != 0 {
		t.Fatalf("stats %+v after closing the session", st)
	}
}

// TestFetchSessionWithoutCache: without a cache every fetch is sessionless
// (session 0) and an incremental one is FETCH_SESSION_ID_NOT_FOUND.
func TestFetchSessionWithoutCache(t *testing.T) {
	h := &fetchHandler{leaders: leaders{"a-0": hotReplica(t, "a", 0, 1)}, log: quiet(), opts: buildOptions(nil)}
	if resp := roundTrip(t, h, sessReq(0, 0, map[string]int64{"a-0": 0})); resp.SessionID != 0 || len(answered(resp)) != 1 {
		t.Fatalf("full fetch: session %d, answered %v", resp.SessionID, answered(resp))
	}
	if resp := roundTrip(t, h, sessReq(5, 1, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("incremental fetch: error %d", resp.ErrorCode)
	}
}

// TestFetchSessionEmptiedCloses: an incremental fetch that forgets every
// partition closes the session and is answered without one.
func TestFetchSessionEmptiedCloses(t *testing.T) {
	cache := NewSessionCache(10)
	h := &fetchHandler{leaders: leaders{"a-0": hotReplica(t, "a", 0, 1)}, log: quiet(), opts: buildOptions([]Option{WithSessionCache(cache)})}
	id := roundTrip(t, h, sessReq(0, 0, map[string]int64{"a-0": 0})).SessionID
	if resp := roundTrip(t, h, sessReq(id, 1, nil, "a-0")); resp.ErrorCode != 0 || resp.SessionID != 0 || len(resp.Topics) != 0 {
		t.Fatalf("forget all: error %d, session %d, %d topics", resp.ErrorCode, resp.SessionID, len(resp.Topics))
	}
	if st := cache.Stats(); st.Sessions != 0 {
		t.Fatalf("stats %+v, want the session closed", st)
	}
}

// fakeClock is a settable clock for the cache.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// open creates a session of n partitions on c and returns its id (0: none).
func open(c *SessionCache, privileged bool, n int) int32 {
	parts := make([]partReq, n)
	res := []topicResult{{topic: "t"}}
	for i := range parts {
		parts[i] = partReq{tp: tp{"t", int32(i)}}
		res[0].parts = append(res[0].parts, partResult{partition: int32(i)})
	}
	return c.create(privileged, nil, parts, res)
}

// TestSessionCacheEviction: Kafka's eviction rules with two slots.
func TestSessionCacheEviction(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	c := newSessionCache(2, DefaultSessionEviction, clk.now)
	small := open(c, false, 1)
	big := open(c, false, 5)
	if small == 0 || big == 0 {
		t.Fatal("two slots, two sessions refused")
	}
	// Full, nothing stale, nothing old enough: a consumer gets no session.
	if id := open(c, false, 50); id != 0 {
		t.Fatal("a consumer evicted a recently created session")
	}
	// A follower may evict a consumer's session however new: the least
	// valuable, the small one.
	clk.t = clk.t.Add(time.Second)
	f1 := open(c, true, 3)
	if f1 == 0 || c.sessions[small] != nil || c.sessions[big] == nil {
		t.Fatalf("follower session %d; small kept %v, big kept %v", f1, c.sessions[small] != nil, c.sessions[big] != nil)
	}
	if st := c.Stats(); st.Evictions != 1 || st.Sessions != 2 || st.Partitions != 8 {
		t.Fatalf("stats %+v", st)
	}
	// Another follower: the consumer's session goes, never a recent
	// follower's.
	f2 := open(c, true, 1)
	if f2 == 0 || c.sessions[big] != nil || c.sessions[f1] == nil {
		t.Fatal("a follower did not evict the consumer session, or evicted a recent follower")
	}
	if id := open(c, true, 100); id != 0 {
		t.Fatal("a follower evicted a recently created follower session")
	}
	// Both used now, then 60 s later: neither stale nor old; 130 s after
	// creation, f2 used again: both old, f1 stale (unused > 120 s).
	clk.t = clk.t.Add(60 * time.Second)
	c.mu.Lock()
	c.touchLocked(c.sessions[f2], clk.t)
	c.mu.Unlock()
	clk.t = clk.t.Add(70 * time.Second)
	c.mu.Lock()
	c.touchLocked(c.sessions[f2], clk.t)
	c.mu.Unlock()
	c3 := open(c, false, 1)
	if c3 == 0 || c.sessions[f1] != nil || c.sessions[f2] == nil {
		t.Fatal("the stale session was not the one evicted")
	}
	// Old sessions go to a more valuable one only: c3 is new, f2 old with
	// 1 partition; a consumer of 1 does not beat f2, one of 2 beats
	// nothing it may evict (c3 is recent, f2 privileged ranks above).
	clk.t = clk.t.Add(time.Second)
	if id := open(c, false, 2); id != 0 {
		t.Fatal("a consumer evicted a follower's session")
	}
	clk.t = clk.t.Add(DefaultSessionEviction + time.Second)
	c.mu.Lock()
	c.touchLocked(c.sessions[f2], clk.t)
	c.touchLocked(c.sessions[c3], clk.t)
	c.mu.Unlock()
	// Now c3 (consumer, 1 partition) is old: a consumer of 2 evicts it, a
	// consumer of 1 would not (equal value).
	if id := open(c, false, 1); id != 0 {
		t.Fatal("a session evicted one of equal value")
	}
	if id := open(c, false, 2); id == 0 || c.sessions[c3] != nil {
		t.Fatal("a larger consumer session did not evict an old smaller one")
	}
}

func TestNextEpoch(t *testing.T) {
	for _, c := range []struct{ in, want int32 }{{0, 1}, {1, 2}, {-1, -1}, {1<<31 - 1, 1}} {
		if got := nextEpoch(c.in); got != c.want {
			t.Errorf("nextEpoch(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

// FuzzFetchSession: any Fetch body, decoded and served twice (the second
// at the session the first answered), gets an answer, never a panic.
func FuzzFetchSession(f *testing.F) {
	for _, r := range []*kmsg.FetchRequest{
		sessReq(0, 0, map[string]int64{"a-0": 0, "a-1": 5}),
		sessReq(7, 3, map[string]int64{"a-0": 1}, "a-1"),
		sessReq(0, -1, nil, "a-0", "a-0"),
	} {
		f.Add(r.AppendTo(nil))
	}
	reps := leaders{"a-0": hotReplica(f, "a", 0, 3)}
	f.Fuzz(func(t *testing.T, b []byte) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		if err := req.ReadFrom(b); err != nil {
			return
		}
		req.MaxWaitMillis = 0
		h := &fetchHandler{leaders: reps, log: quiet(), opts: buildOptions([]Option{WithSessionCache(newSessionCache(2, time.Minute, time.Now))})}
		resp := roundTrip(t, h, req)
		if resp.ErrorCode != 0 && resp.ErrorCode != kerr.FetchSessionIDNotFound.Code && resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
			t.Fatalf("error %d", resp.ErrorCode)
		}
		if resp.SessionID != 0 {
			req.SessionID, req.SessionEpoch = resp.SessionID, 1
			roundTrip(t, h, req)
		}
	})
}
