package replicationtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/segment/batch"
)

// batchesBelow reads the .log files of a partition directory in base
// offset order and returns the concatenated bytes of every whole batch
// whose last offset is below hw, with the offset the first starts at. It
// reads files a live node is appending to: a torn tail past hw is ignored.
func batchesBelow(dir string, hw int64) ([]byte, int64, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(names) // 20-digit zero-padded base offsets sort as numbers
	var out []byte
	first := int64(-1)
	next := int64(-1)
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, 0, err
		}
		for pos := 0; pos+batch.HeaderSize <= len(b); {
			h, err := batch.ParseHeader(b[pos:])
			if err != nil || h.Length <= 0 || pos+h.Size() > len(b) {
				break // preallocated zeros or a torn tail
			}
			if h.LastOffset() >= hw {
				break
			}
			if next >= 0 && h.BaseOffset != next {
				return nil, 0, fmt.Errorf("%s: batch at offset %d follows one ending at %d", name, h.BaseOffset, next-1)
			}
			if first < 0 {
				first = h.BaseOffset
			}
			next = h.NextOffset()
			out = append(out, b[pos:pos+h.Size()]...)
			pos += h.Size()
		}
	}
	if next >= 0 && next != hw {
		return nil, 0, fmt.Errorf("%s: batches below %d end at %d", dir, hw, next)
	}
	return out, first, nil
}

// checkReplicasIdentical waits until every partition's three replicas hold
// the same batch bytes, byte for byte, below the leader's high watermark
// (as ListOffsets reports it), and at least one batch each. All nodes must
// be live and producing stopped.
func (c *cluster) checkReplicasIdentical(d time.Duration) {
	c.t.Helper()
	ctx := proctest.Context(c.t, d+5*time.Second)
	adm := kadm.NewClient(c.live()[0].Client())
	var last string
	err := proctest.WaitFor(d, func() bool {
		ends, err := adm.ListEndOffsets(ctx, c.topic)
		if err != nil {
			last = err.Error()
			return false
		}
		for p := range c.parts {
			lo, ok := ends.Lookup(c.topic, p)
			if !ok || lo.Err != nil {
				last = fmt.Sprintf("partition %d: end offset %v", p, lo.Err)
				return false
			}
			var ref []byte
			for i, n := range c.nodes {
				b, _, err := batchesBelow(n.partitionDir(c.topic, p), lo.Offset)
				if err != nil {
					last = fmt.Sprintf("node %d: %v", n.id, err)
					return false
				}
				if len(b) == 0 {
					last = fmt.Sprintf("node %d partition %d: no batches below %d", n.id, p, lo.Offset)
					return false
				}
				if i == 0 {
					ref = b
				} else if !bytes.Equal(ref, b) {
					last = fmt.Sprintf("partition %d: node %d's %d bytes below HW %d differ from node 1's %d", p, n.id, len(b), lo.Offset, len(ref))
					return false
				}
			}
		}
		return true
	})
	if err != nil {
		c.t.Fatalf("replica logs not identical below the high watermark after %v: %s", d, last)
	}
}

var errNoLog = errors.New("no .log file with batches")

// dropTailBatches cuts the last n whole batches (fewer if the file holds
// fewer) off the partition's last non-empty .log file on a stopped node, as
// if they had never been flushed, and returns the first offset dropped.
func dropTailBatches(dir string, n int) (int64, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return 0, err
	}
	slices.Sort(names)
	for i := len(names) - 1; i >= 0; i-- {
		b, err := os.ReadFile(names[i])
		if err != nil {
			return 0, err
		}
		var starts []int
		var bases []int64
		for pos := 0; pos+batch.HeaderSize <= len(b); {
			h, err := batch.ParseHeader(b[pos:])
			if err != nil || h.Length <= 0 || pos+h.Size() > len(b) {
				break
			}
			starts, bases = append(starts, pos), append(bases, h.BaseOffset)
			pos += h.Size()
		}
		if len(starts) == 0 {
			continue
		}
		k := max(0, len(starts)-n)
		return bases[k], os.Truncate(names[i], int64(starts[k]))
	}
	return 0, errNoLog
}
