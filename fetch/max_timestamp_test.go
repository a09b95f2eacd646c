package fetch

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

func (m *memRemote) MaxTimestamp(string, int32) (int64, bool) {
	ts, ok := int64(-1), false
	batch.Split(m.batches, func(h *batch.Header, _ []byte) error {
		if h.MaxTimestamp > ts {
			ts, ok = h.MaxTimestamp, true
		}
		return nil
	})
	return ts, ok
}

func (m twoRemotes) MaxTimestamp(t string, p int32) (int64, bool) {
	if m[t] == nil {
		return -1, false
	}
	return m[t].MaxTimestamp(t, p)
}

// spikedReplica is a replica of n records stamped tsBase+10*i, except record
// spike, stamped far in the future (a producer with a skewed clock); the
// segments below n/2 are deleted locally and held by a memRemote.
func spikedReplica(t *testing.T, n, spike int) (*partition.Replica, *memRemote) {
	t.Helper()
	rep, err := partition.Open(partition.Options{Dir: t.TempDir(), Topic: "cold", Partition: 0,
		Config: config.ResolveTopic(map[string]string{config.SegmentBytes: "4096"}, nil), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	rep.SetLeadership(true, 0) // a replica opens as a follower
	t.Cleanup(func() { rep.Close() })
	var all []byte
	for i := 0; i < n; i += 10 {
		var recs []batch.Record
		for j := i; j < i+10; j++ {
			d := int64(10 * (j - i))
			if j == spike {
				d = 1 << 40
			}
			recs = append(recs, batch.Record{TimestampDelta: d, Value: fmt.Appendf(nil, "v-%06d", j)})
		}
		opts := batch.NoProducer()
		opts.FirstTimestamp = tsBase + int64(10*i)
		b, err := batch.Build(nil, opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rep.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if _, err := rep.DeleteRecordsBefore(int64(n / 2)); err != nil {
		t.Fatal(err)
	}
	return rep, &memRemote{batches: all}
}

// MAX_TIMESTAMP (KIP-734) covers the remote segments too: the largest
// timestamp may have left the local disk.
func TestListOffsetsMaxTimestampAcrossRemoteAndLocal(t *testing.T) {
	for _, c := range []struct {
		name       string
		spike      int
		wantOffset int64
		wantTs     int64
	}{
		{"in the remote segments", 123, 123, tsBase + 10*120 + 1<<40},
		{"in the local segments", 1877, 1877, tsBase + 10*1870 + 1<<40},
		{"no spike: the last record", -1, 1999, tsBase + 10*1990 + 90},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, remote := spikedReplica(t, 2000, c.spike)
			if remoteOnly := int64(c.spike) < rep.Log().LogStartOffset(); c.spike >= 0 && remoteOnly != (c.spike == 123) {
				t.Fatalf("spike %d on the wrong side of local log start %d", c.spike, rep.Log().LogStartOffset())
			}
			h := &listOffsetsHandler{leaders: leaders{"cold-0": rep}, log: quiet(), remote: remote}
			p := listOffset(t, h, -3)
			if p.ErrorCode != 0 || p.Offset != c.wantOffset || p.Timestamp != c.wantTs {
				t.Fatalf("MAX_TIMESTAMP: offset %d timestamp %d error %d, want offset %d timestamp %d",
					p.Offset, p.Timestamp, p.ErrorCode, c.wantOffset, c.wantTs)
			}
			if c.spike == 123 {
				// Without the remote reader the answer can only be local: the
				// spike is not seen.
				local := &listOffsetsHandler{leaders: leaders{"cold-0": rep}, log: quiet()}
				if p := listOffset(t, local, -3); p.Offset != 1999 {
					t.Fatalf("MAX_TIMESTAMP without tiering: %d", p.Offset)
				}
				// A bucket failure is an error, not the local answer.
				remote.failing.Store(true)
				if p := listOffset(t, h, -3); p.ErrorCode != kerr.KafkaStorageError.Code || p.Offset != -1 {
					t.Fatalf("MAX_TIMESTAMP with a failing bucket: offset %d error %d", p.Offset, p.ErrorCode)
				}
			}
		})
	}
}
