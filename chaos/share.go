package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The share group workload (KIP-932): members of one share group consume
// the plain topic with franz-go's share consumer and accept every record
// they get, flushing their acknowledgements after each poll. A member
// lives a while, closes (its session closes: what it holds is released)
// and a new one joins, so that records move between members as faults
// hit the partitions' leaders, the share coordinator and the group
// coordinator. Check (checkShare) then asks: every record produced was
// accepted at least once (SHARE-UNACCEPTED), no member got a record that
// is not in the log at its offset (INCONSISTENT), and no record was
// delivered again after its acceptance was confirmed (SHARE-REDELIVERED).

// shareGroupName is the workload's share group. Its __consumer_offsets
// partition is chaos-g's (8 of 50), so that kill-coordinator and
// wipe-coordinator, which aim at chaos-g's coordinator, hit the share
// group's coordinator too (TestShareGroupSharesCoordinator).
const shareGroupName = "chaos-share-9"

// ShareDelivery is one record a share member got: its delivery count is
// the broker's count of its acquisitions, this one included.
type ShareDelivery struct {
	TP
	Offset int64         `json:"offset"`
	Value  string        `json:"value"`
	Member string        `json:"member"`
	Count  int32         `json:"count"`
	At     time.Duration `json:"at"`
}

// ShareAccept is one acceptance a member sent for a delivery; Confirmed
// when the broker answered every acknowledgement of that poll without an
// error (the state is then persisted: the record must not come back).
type ShareAccept struct {
	TP
	Offset    int64         `json:"offset"`
	Member    string        `json:"member"`
	Count     int32         `json:"count"`
	Confirmed bool          `json:"confirmed"`
	At        time.Duration `json:"at"`
}

// ShareHistory is what the share group workload recorded.
type ShareHistory struct {
	Group      string          `json:"group"`
	Topic      string          `json:"topic"`
	Deliveries []ShareDelivery `json:"deliveries"`
	Accepts    []ShareAccept   `json:"accepts"`
	// Drained: every record acknowledged to the producers was accepted
	// before the members stopped (within the drain's bound).
	Drained bool `json:"drained"`
}

// shareWorkload is the share group's members and what they recorded.
type shareWorkload struct {
	seeds []string
	topic topicSpec
	rec   *recorder

	mu       sync.Mutex
	h        ShareHistory
	accepted map[TP]map[int64]bool // accepts sent, for the drain
}

func newShareWorkload(seeds []string, t topicSpec, rec *recorder) *shareWorkload {
	return &shareWorkload{seeds: seeds, topic: t, rec: rec, h: ShareHistory{Group: shareGroupName, Topic: t.name},
		accepted: map[TP]map[int64]bool{}}
}

// member runs one member slot until ctx ends: a client lives life, then
// closes and a new one joins.
func (s *shareWorkload) member(ctx context.Context, name string, life time.Duration) {
	s.rec.actor(name, "share")
	for ctx.Err() == nil {
		s.memberLife(ctx, name, life)
	}
}

func (s *shareWorkload) memberLife(ctx context.Context, name string, life time.Duration) {
	var mu sync.Mutex
	ackFailed := false
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.seeds...), kgo.ShareGroup(shareGroupName), kgo.ConsumeTopics(s.topic.name),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 200 * time.Millisecond }),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			if !rs.Ok() {
				mu.Lock()
				ackFailed = true
				mu.Unlock()
			}
		}))
	if err != nil {
		sleepCtx(ctx, time.Second)
		return
	}
	defer cl.Close() // closes the share sessions: what it holds is released
	lctx, cancel := context.WithTimeout(ctx, life)
	defer cancel()
	for lctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(lctx, time.Second)
		fs := cl.PollRecords(pctx, 200)
		pcancel()
		// A failure reported from now on (piggybacked on a fetch, or the
		// flush) leaves this poll's acceptances unconfirmed.
		mu.Lock()
		ackFailed = false
		mu.Unlock()
		var ds []ShareDelivery
		now := s.rec.since()
		fs.EachRecord(func(r *kgo.Record) {
			ds = append(ds, ShareDelivery{TP: TP{r.Topic, r.Partition}, Offset: r.Offset, Value: string(r.Value), Member: name,
				Count: r.DeliveryCount(), At: now})
			r.Ack(kgo.AckAccept)
		})
		if len(ds) == 0 {
			continue
		}
		fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		ferr := cl.FlushAcks(fctx)
		fcancel()
		mu.Lock()
		confirmed := ferr == nil && !ackFailed
		mu.Unlock()
		at := s.rec.since()
		s.mu.Lock()
		s.h.Deliveries = append(s.h.Deliveries, ds...)
		for _, d := range ds {
			s.h.Accepts = append(s.h.Accepts, ShareAccept{TP: d.TP, Offset: d.Offset, Member: name, Count: d.Count, Confirmed: confirmed, At: at})
			if s.accepted[d.TP] == nil {
				s.accepted[d.TP] = map[int64]bool{}
			}
			s.accepted[d.TP][d.Offset] = true
		}
		s.mu.Unlock()
		if confirmed {
			s.rec.progress(name, at)
		}
	}
}

// acceptedAll reports whether every record acknowledged to a producer on
// the workload's topic was accepted by a member.
func (s *shareWorkload) acceptedAll(acks []Ack) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range acks {
		if a.Topic == s.topic.name && !s.accepted[a.TP][a.Offset] {
			return false
		}
	}
	return true
}

// history returns a copy of what the members recorded.
func (s *shareWorkload) history(drained bool) *ShareHistory {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.h
	h.Deliveries = append([]ShareDelivery(nil), s.h.Deliveries...)
	h.Accepts = append([]ShareAccept(nil), s.h.Accepts...)
	h.Drained = drained
	return &h
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
