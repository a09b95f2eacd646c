package txntest

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
)

// logView is what a partition's log holds, read raw (read_uncommitted)
// and sorted out as Kafka's read_committed consumer does: the values of
// committed transactions and of non-transactional batches, in offset
// order; the values of aborted transactions; the open ones.
type logView struct {
	committed, aborted []string
	open               int // records of transactions without a marker yet
	markers            int
}

// countCommitted is how many committed records partitions 0 to parts-1 of
// topic hold (readLog), or -1 when one of them could not be read.
func countCommitted(ctx context.Context, cl *kgo.Client, topic string, parts int32) int {
	committed := 0
	for p := range parts {
		v, err := readLog(ctx, cl, topic, p)
		if err != nil {
			return -1
		}
		committed += len(v.committed)
	}
	return committed
}

// readLog reads topic-p from offset 0 to its log end with raw Fetch
// requests and sorts its records out by their transaction markers. It
// depends only on the log as written (the markers), not on the broker's
// read_committed support.
func readLog(ctx context.Context, cl *kgo.Client, topic string, p int32) (logView, error) {
	send := func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) { return cl.Request(ctx, req) }
	if len(cl.SeedBrokers()) > 1 {
		// A cluster: ask the partition's leader (a Fetch is not routed).
		leader, err := leaderOf(ctx, cl, topic, p)
		if err != nil {
			return logView{}, err
		}
		send = cl.Broker(int(leader)).Request
	}
	topicID, err := proctest.TopicID(ctx, cl, topic)
	if err != nil {
		return logView{}, err
	}
	var v logView
	pending := map[int64][]string{} // producer id -> values of its open transaction
	for off := int64(0); ; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 8<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, off, 8<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := send(ctx, req)
		if err != nil {
			return v, err
		}
		resp := kresp.(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return v, fmt.Errorf("fetch answer %+v", resp)
		}
		fp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(fp.ErrorCode); err != nil {
			return v, err
		}
		if off >= fp.HighWatermark {
			break
		}
		next := off
		err = batch.Split(fp.RecordBatches, func(h *batch.Header, one []byte) error {
			if h.NextOffset() <= off {
				return nil
			}
			next = h.NextOffset()
			if h.Control() {
				m, ok, err := batch.ParseEndTxnMarker(one)
				if err != nil || !ok {
					return err
				}
				v.markers++
				if m.Commit {
					v.committed = append(v.committed, pending[h.ProducerID]...)
				} else {
					v.aborted = append(v.aborted, pending[h.ProducerID]...)
				}
				delete(pending, h.ProducerID)
				return nil
			}
			return batch.ForEachRecord(one, 64<<20, func(r *batch.Record) error {
				if h.BaseOffset+int64(r.OffsetDelta) < off {
					return nil
				}
				if h.Transactional() {
					pending[h.ProducerID] = append(pending[h.ProducerID], string(r.Value))
				} else {
					v.committed = append(v.committed, string(r.Value))
				}
				return nil
			})
		})
		if err != nil {
			return v, err
		}
		if next <= off {
			return v, fmt.Errorf("fetch at %d made no progress (high watermark %d)", off, fp.HighWatermark)
		}
		off = next
	}
	for _, vals := range pending {
		v.open += len(vals)
	}
	return v, nil
}

// checkExactlyOnce checks that the committed values of topic's partitions
// are exactly want (each once) and that no aborted value is among them;
// it returns how many aborted records the log holds.
func checkExactlyOnce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions int32, want map[string]bool) (aborted int) {
	t.Helper()
	seen := map[string]int{}
	for p := range partitions {
		v, err := readLog(ctx, cl, topic, p)
		if err != nil {
			t.Fatalf("reading %s-%d: %v", topic, p, err)
		}
		if v.open > 0 {
			t.Errorf("%s-%d: %d records of transactions still open", topic, p, v.open)
		}
		for _, s := range v.committed {
			seen[s]++
		}
		aborted += len(v.aborted)
	}
	for s, n := range seen {
		switch {
		case !want[s]:
			t.Errorf("committed %q, which is no input's output", s)
		case n > 1:
			t.Errorf("committed %q %d times", s, n)
		}
	}
	missing := 0
	for s := range want {
		if seen[s] == 0 {
			missing++
			if missing <= 5 {
				t.Errorf("input's output %q never committed", s)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d outputs missing", missing, len(want))
	}
	return aborted
}

// leaderOf is topic-p's leader in the metadata cl is answered.
func leaderOf(ctx context.Context, cl *kgo.Client, topic string, p int32) (int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		for _, mp := range t.Partitions {
			if mp.Partition == p && mp.ErrorCode == 0 && mp.Leader >= 0 {
				return mp.Leader, nil
			}
		}
	}
	return -1, fmt.Errorf("%s-%d has no leader", topic, p)
}
