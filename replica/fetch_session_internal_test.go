package replica

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// named lists the partitions req names, "topic-partition" sorted, and
// those it forgets.
func named(req *kmsg.FetchRequest) (parts, forgotten []replicaKey) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, replicaKey{t.Topic, p.Partition})
		}
	}
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			forgotten = append(forgotten, replicaKey{t.Topic, p})
		}
	}
	cmp := func(a, b replicaKey) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	}
	slices.SortFunc(parts, cmp)
	slices.SortFunc(forgotten, cmp)
	return parts, forgotten
}

func want3(offsets ...int64) []wanted {
	var out []wanted
	for i, o := range offsets {
		out = append(out, wanted{key: replicaKey{"t", int32(i)}, partFetch: partFetch{fetchOffset: o, leaderEpoch: 1, max: 100}})
	}
	return out
}

// sessionRound builds a Fetch of next and feeds it resp; it returns the
// request.
func sessionRound(t *testing.T, s *followerSession, next []wanted, resp *kmsg.FetchResponse) (*kmsg.FetchRequest, bool, error) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	full := s.build(req, next)
	ok, err := s.answered(resp, next, full)
	return req, ok, err
}

func sessionResp(code int16, id int32) *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.ErrorCode, r.SessionID = code, id
	return r
}

// TestFollowerSessionRequests: the follower's Fetch is full until the
// leader grants a session, then names only what changed and forgets what
// it no longer fetches; each kind of failure sends it back to a full Fetch.
func TestFollowerSessionRequests(t *testing.T) {
	var s followerSession
	k := func(p int32) replicaKey { return replicaKey{"t", p} }

	req, ok, err := sessionRound(t, &s, want3(5, 5, 5), sessionResp(0, 42))
	if parts, _ := named(req); !ok || err != nil || req.SessionID != 0 || req.SessionEpoch != 0 || len(parts) != 3 {
		t.Fatalf("first Fetch: session %d epoch %d, %d partitions", req.SessionID, req.SessionEpoch, len(parts))
	}
	// Idle: nothing named.
	req, _, _ = sessionRound(t, &s, want3(5, 5, 5), sessionResp(0, 42))
	if parts, forgot := named(req); req.SessionID != 42 || req.SessionEpoch != 1 || len(parts) != 0 || len(forgot) != 0 {
		t.Fatalf("idle Fetch: session %d epoch %d, named %v forgot %v", req.SessionID, req.SessionEpoch, parts, forgot)
	}
	// Partition 1 moved on; partition 2 paused (not fetched this round).
	req, _, _ = sessionRound(t, &s, want3(5, 9), sessionResp(0, 42))
	if parts, forgot := named(req); req.SessionEpoch != 2 || !slices.Equal(parts, []replicaKey{k(1)}) || !slices.Equal(forgot, []replicaKey{k(2)}) {
		t.Fatalf("epoch 2: named %v forgot %v", parts, forgot)
	}
	// Partition 2 back, and partition 0's last fetched epoch changed (a
	// truncation or a new leader epoch's batches): both named.
	next := want3(5, 9, 5)
	next[0].lastFetchedEpoch = 3
	req, _, _ = sessionRound(t, &s, next, sessionResp(kerr.InvalidFetchSessionEpoch.Code, 0))
	if parts, _ := named(req); req.SessionEpoch != 3 || !slices.Equal(parts, []replicaKey{k(0), k(2)}) {
		t.Fatalf("epoch 3: named %v", parts)
	}
	// That answer was INVALID_FETCH_SESSION_EPOCH: the next Fetch is full
	// and closes session 42.
	req, ok, err = sessionRound(t, &s, next, sessionResp(0, 43))
	if parts, _ := named(req); !ok || err != nil || req.SessionID != 42 || req.SessionEpoch != 0 || len(parts) != 3 {
		t.Fatalf("after INVALID_FETCH_SESSION_EPOCH: session %d epoch %d, %d partitions", req.SessionID, req.SessionEpoch, len(parts))
	}
	// FETCH_SESSION_ID_NOT_FOUND (the leader restarted): full, session 0.
	if _, ok, err = sessionRound(t, &s, next, sessionResp(kerr.FetchSessionIDNotFound.Code, 0)); ok || err != nil {
		t.Fatalf("FETCH_SESSION_ID_NOT_FOUND: ok %v err %v; want no partitions, no failure", ok, err)
	}
	req, _, _ = sessionRound(t, &s, next, sessionResp(0, 44))
	if parts, _ := named(req); req.SessionID != 0 || req.SessionEpoch != 0 || len(parts) != 3 {
		t.Fatalf("after FETCH_SESSION_ID_NOT_FOUND: session %d epoch %d, %d partitions", req.SessionID, req.SessionEpoch, len(parts))
	}
	// Another top-level error fails the round and goes full; so does a
	// reset (no answer, or a role change).
	if _, _, err = sessionRound(t, &s, next, sessionResp(kerr.NotLeaderForPartition.Code, 0)); err == nil {
		t.Fatal("a top-level error did not fail the round")
	}
	if req, _, _ = sessionRound(t, &s, next, sessionResp(0, 45)); req.SessionEpoch != 0 {
		t.Fatalf("after a top-level error: epoch %d", req.SessionEpoch)
	}
	s.reset()
	if req, _, _ = sessionRound(t, &s, next, sessionResp(0, 46)); req.SessionEpoch != 0 || req.SessionID != 45 {
		t.Fatalf("after a reset: session %d epoch %d, want a full Fetch closing 45", req.SessionID, req.SessionEpoch)
	}
	// An incremental Fetch answered session 0 (the leader closed it), and
	// a leader that declines sessions (answers 0 to full ones): full every
	// time.
	sessionRound(t, &s, next, sessionResp(0, 0))
	for range 2 {
		if req, _, _ = sessionRound(t, &s, next, sessionResp(0, 0)); req.SessionEpoch != 0 {
			t.Fatalf("declined: epoch %d", req.SessionEpoch)
		}
	}
}

// BenchmarkIdleSessionRound is one round of an established session whose
// partitions all ask what they asked before (an idle follower): build
// names none of them and answered keeps the session as it is. What it
// costs per partition is what every follower pays every replica.fetch.wait.max.ms
// per leader while nothing is written; -benchmem shows whether it
// allocates in proportion to the partitions.
func BenchmarkIdleSessionRound(b *testing.B) {
	for _, n := range []int{8, 1000, 10000} {
		b.Run(fmt.Sprintf("partitions-%d", n), func(b *testing.B) {
			next := make([]wanted, n)
			for i := range next {
				next[i] = wanted{key: replicaKey{"t", int32(i)}, partFetch: partFetch{fetchOffset: 5, leaderEpoch: 1, max: 100}}
			}
			var s followerSession
			resp := sessionResp(0, 7)
			req := kmsg.NewPtrFetchRequest()
			s.answered(resp, next, s.build(req, next))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req := kmsg.NewPtrFetchRequest()
				full := s.build(req, next)
				if full || len(req.Topics) != 0 {
					b.Fatalf("an idle round built full=%v with %d topics", full, len(req.Topics))
				}
				if ok, err := s.answered(resp, next, full); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/partition")
		})
	}
}
