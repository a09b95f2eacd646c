package coldread

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/internal/controlplanetest"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// controlPlane starts an in-process NATS server, a Store with one broker and
// the topic, and a RemoteLog.
func controlPlane(t testing.TB, topic string) (*controlplane.Store, *controlplane.RemoteLog, controlplane.Topic) {
	t.Helper()
	ctx := testCtx(t)
	st, rl := controlplanetest.Open(t, ctx, 9091)
	top, err := st.CreateTopic(ctx, topic, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, rl, top
}

// tsBase is the first record's timestamp; record i (offset i) has
// timestamp tsBase + 10*i.
const tsBase = 1_700_000_000_000

// writeLog writes records [0, n) in batches of perBatch into a segment log
// with small segments and returns it closed, its directory, and every
// record batch byte it holds (from offset 0, in order).
func writeLog(t testing.TB, n, perBatch int, segmentBytes int64, codec batch.Codec) (dir string, all []byte) {
	t.Helper()
	dir = t.TempDir()
	cfg := segment.Defaults()
	cfg.SegmentBytes = segmentBytes
	cfg.SegmentAge = 100 * 365 * 24 * time.Hour // the records carry old timestamps
	cfg.IndexIntervalBytes = 512
	cfg.SegmentIndexBytes = 1 << 16
	cfg.Logger = quietLogger()
	l, err := segment.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += perBatch {
		var recs []batch.Record
		for j := i; j < min(i+perBatch, n); j++ {
			recs = append(recs, batch.Record{TimestampDelta: int64(10 * (j - i)),
				Key: fmt.Appendf(nil, "k%d", j), Value: bytes.Repeat(fmt.Appendf(nil, "value-%d;", j), 8)})
		}
		opts := batch.NoProducer()
		opts.Codec = codec
		opts.FirstTimestamp = tsBase + int64(10*i)
		b, err := batch.Build(nil, opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	// ReadBytes stops at a segment end: gather every segment.
	for off := int64(0); off < int64(n); {
		b, err := l.ReadBytes(off, math.MaxInt32, math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatalf("no data at offset %d", off)
		}
		all = append(all, b...)
		off = lastNext(t, b)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, all
}

// lastNext returns the offset after the last batch in b.
func lastNext(t testing.TB, b []byte) int64 {
	t.Helper()
	var next int64 = -1
	if err := batch.Split(b, func(h *batch.Header, _ []byte) error { next = h.NextOffset(); return nil }); err != nil {
		t.Fatal(err)
	}
	return next
}

// uploaded is one segment put into the bucket by hand.
type uploaded struct {
	seg  controlplane.RemoteSegment
	data []byte // the .log bytes
}

// upload copies every segment of the closed log in dir except the last
// (the one a live log would keep active) into bucket under DESIGN.md-shaped
// keys and records them CopyFinished in rl. It returns them in offset order.
func upload(t testing.TB, dir string, bucket objstore.Bucket, rl *controlplane.RemoteLog, top controlplane.Topic, keepLast bool) []uploaded {
	t.Helper()
	ctx := testCtx(t)
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if keepLast {
		logs = logs[:len(logs)-1]
	}
	var out []uploaded
	for _, lp := range logs {
		data, err := os.ReadFile(lp)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			continue
		}
		var base, end, maxTs int64 = -1, -1, -1
		if err := batch.Split(data, func(h *batch.Header, _ []byte) error {
			if base < 0 {
				base = h.BaseOffset
			}
			end, maxTs = h.LastOffset(), max(maxTs, h.MaxTimestamp)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		segID := controlplane.NewSegmentID()
		prefix := fmt.Sprintf("cold/ab/%s-%s/0/%020d-0-%s", top.Name, top.ID.Hex(), base, segID)
		seg := controlplane.RemoteSegment{TopicID: top.ID, Partition: 0, SegmentID: segID, BaseOffset: base,
			EndOffset: end, MaxTimestamp: maxTs, Size: int64(len(data)), LeaderEpoch: 0,
			SegmentEpochs: []controlplane.EpochEntry{{Epoch: 0, StartOffset: base}}, State: controlplane.CopyStarted}
		stem := lp[:len(lp)-len(".log")]
		for _, kind := range []string{"log", "index", "timeindex"} {
			b, err := os.ReadFile(stem + "." + kind)
			if err != nil {
				t.Fatal(err)
			}
			key := prefix + "." + kind
			if err := bucket.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
				t.Fatal(err)
			}
			seg.Objects = append(seg.Objects, key)
		}
		seg, err = rl.PutRemoteSegment(ctx, seg, 0)
		if err != nil {
			t.Fatal(err)
		}
		seg.State = controlplane.CopyFinished
		if seg, err = rl.PutRemoteSegment(ctx, seg, seg.Revision); err != nil {
			t.Fatal(err)
		}
		out = append(out, uploaded{seg: seg, data: data})
	}
	return out
}

// tiered is a partition written by the segment package and uploaded.
type tiered struct {
	reader *Reader
	bucket objstore.Bucket
	segs   []uploaded
	all    []byte // every batch of the uploaded segments, from offset 0
	topic  string
}

// tieredFixture writes n records, uploads every segment, and opens a Reader
// with cfg over an fsbucket (wrapped by wrap, if set).
func tieredFixture(t testing.TB, n int, cfg Config, wrap func(objstore.Bucket) objstore.Bucket) *tiered {
	return tieredFixtureSized(t, n, 32<<10, cfg, wrap)
}

// tieredFixtureSized is tieredFixture with segments of segmentBytes.
func tieredFixtureSized(t testing.TB, n int, segmentBytes int64, cfg Config, wrap func(objstore.Bucket) objstore.Bucket) *tiered {
	t.Helper()
	st, rl, top := controlPlane(t, "cold")
	dir, all := writeLog(t, n, 10, segmentBytes, batch.CodecNone)
	fb, err := fsbucket.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var b objstore.Bucket = fb
	segs := upload(t, dir, b, rl, top, false)
	if len(segs) < 3 {
		t.Fatalf("only %d segments: the test needs several", len(segs))
	}
	if wrap != nil {
		b = wrap(b)
	}
	r, err := newReader(cfg, b, rl, st, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return &tiered{reader: r, bucket: b, segs: segs, all: all, topic: "cold"}
}

// smallConfig uses 4 KiB chunks so that batches straddle chunk boundaries.
func smallConfig() Config {
	c := Defaults()
	c.ChunkBytes = 4 << 10
	c.CacheBytes = 64 << 10
	return c
}
