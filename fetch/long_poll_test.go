package fetch

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
)

// countingLeaders counts the partitions a fetch reads (each read looks its
// leader up once).
type countingLeaders struct {
	leaders
	n atomic.Int64
}

func (c *countingLeaders) Leader(topic string, p int32) (*partition.Replica, error) {
	c.n.Add(1)
	return c.leaders.Leader(topic, p)
}

// TestLongPollRereadsOnlyWoken: a consumer's fetch of 20 partitions at
// their ends long-polls; a record on one wakes it, and only that partition
// is read again (21 reads, not 40), its record answered. It failed before
// the long poll re-read only what woke it: every wake read all 20 again.
func TestLongPollRereadsOnlyWoken(t *testing.T) {
	const parts = 20
	ls := &countingLeaders{leaders: leaders{}}
	for p := int32(0); p < parts; p++ {
		ls.leaders[fmt.Sprintf("a-%d", p)] = hotReplica(t, "a", p, 1)
	}
	h := &fetchHandler{leaders: ls, log: quiet(), opts: buildOptions(nil)}
	offsets := map[string]int64{}
	for p := 0; p < parts; p++ {
		offsets[fmt.Sprintf("a-%d", p)] = 1
	}
	req := sessReq(0, -1, offsets)
	req.MaxWaitMillis, req.MinBytes = 60_000, 1
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		reply, err := h.handle(proctest.Context(t, 90*time.Second), &kafka.Request{Key: 1, Version: req.Version, Msg: req})
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		done <- decodeBody(t, reply.Body.(*body), req.Version)
	}()
	if err := proctest.Poll(30*time.Second, time.Millisecond, func() bool { return ls.n.Load() >= parts }); err != nil {
		t.Fatalf("the fetch read %d partitions: %v", ls.n.Load(), err)
	}
	// The fetch has read every partition once and waits (nothing to
	// answer: min bytes 1); a record on a-7 wakes it.
	appendOne(t, ls.leaders["a-7"])
	resp := <-done
	if resp == nil {
		t.FailNow()
	}
	got := answered(resp)
	if got["a-7"] == 0 {
		t.Fatalf("answered %v, want a-7's record", got)
	}
	if n := ls.n.Load(); n != parts+1 {
		t.Fatalf("the fetch read %d partitions, want %d: the first pass, then a-7 alone", n, parts+1)
	}
}
