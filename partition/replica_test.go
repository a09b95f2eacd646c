package partition

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
)

// openTest opens a replica alone (no assignment) and makes it leader at
// epoch 0: its high watermark follows its log end.
func openTest(t *testing.T, dir string, topicCfg map[string]string, now func() time.Time) *Replica {
	t.Helper()
	r := openFollower(t, dir, topicCfg, now)
	r.SetLeadership(true, 0)
	return r
}

// openFollower opens a replica as Open leaves it: a follower at epoch 0.
func openFollower(t *testing.T, dir string, topicCfg map[string]string, now func() time.Time) *Replica {
	t.Helper()
	r, err := Open(Options{Dir: dir, Topic: "t", Partition: 0, Config: config.ResolveTopic(topicCfg, nil), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func build(t *testing.T, opts batch.BuildOptions, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("value-%d", i)), TimestampDelta: int64(i)}
	}
	b, err := batch.Build(nil, opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func idem(pid int64, seq int32, ts int64) batch.BuildOptions {
	o := batch.NoProducer()
	o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.FirstTimestamp = pid, 0, seq, ts
	return o
}

func TestAppendLeaderIdempotentAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UnixMilli()
	r := openTest(t, dir, nil, nil)
	first, err := r.AppendLeader(build(t, idem(9, 0, now), 3))
	if err != nil || first.BaseOffset != 0 || first.LastOffset != 2 {
		t.Fatalf("first append: %+v %v", first, err)
	}
	if _, err := r.AppendLeader(build(t, idem(9, 3, now), 2)); err != nil {
		t.Fatal(err)
	}
	if r.HighWatermark() != 5 {
		t.Fatalf("hw %d, want 5", r.HighWatermark())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	r = openTest(t, dir, nil, nil)
	defer r.Close()
	dup, err := r.AppendLeader(build(t, idem(9, 3, now), 2))
	if err != nil || !dup.Duplicate || dup.BaseOffset != 3 {
		t.Fatalf("retried batch after restart must be answered with its original offset: %+v %v", dup, err)
	}
	if _, err := r.AppendLeader(build(t, idem(9, 9, now), 1)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after restart: %v", err)
	}
	if r.Log().LogEndOffset() != 5 {
		t.Fatalf("duplicate was written: leo %d", r.Log().LogEndOffset())
	}
}

func TestAppendLeaderRecompressesAndStampsTime(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	r := openTest(t, t.TempDir(), map[string]string{"compression.type": "zstd", "message.timestamp.type": "LogAppendTime"},
		func() time.Time { return clock })
	defer r.Close()
	o := batch.NoProducer()
	o.FirstTimestamp = 5
	res, err := r.AppendLeader(build(t, o, 4))
	if err != nil {
		t.Fatal(err)
	}
	if res.LogAppendTime != clock.UnixMilli() {
		t.Fatalf("log append time %d", res.LogAppendTime)
	}
	b, err := r.Log().ReadBytes(0, 1<<20, r.HighWatermark(), true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Codec() != batch.CodecZstd || !h.LogAppendTime() || h.MaxTimestamp != clock.UnixMilli() {
		t.Fatalf("stored batch: codec %v logAppendTime %v max ts %d", h.Codec(), h.LogAppendTime(), h.MaxTimestamp)
	}
	if err := batch.VerifyCRC(b[:h.Size()]); err != nil {
		t.Fatal(err)
	}
	recs, err := batch.Records(b[:h.Size()], 1<<20)
	if err != nil || len(recs) != 4 || string(recs[3].Value) != "value-3" {
		t.Fatalf("records after recompression: %d %v", len(recs), err)
	}
}

func TestAppendLeaderRejects(t *testing.T) {
	now := time.Now()
	r := openTest(t, t.TempDir(), map[string]string{"max.message.bytes": "200", "message.timestamp.after.max.ms": "1000"}, nil)
	defer r.Close()
	good := build(t, batch.NoProducer(), 1)
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	future := batch.NoProducer()
	future.FirstTimestamp = now.Add(time.Hour).UnixMilli()
	cases := map[string]struct {
		in   []byte
		want error
	}{
		"crc":       {bad, batch.ErrCRC},
		"too large": {build(t, batch.NoProducer(), 30), batch.ErrTooLarge},
		"two":       {append(append([]byte(nil), good...), good...), ErrOneBatch},
		"future":    {build(t, future, 1), ErrInvalidTimestamp},
		"truncated": {good[:len(good)-3], batch.ErrCorrupt},
		"short":     {good[:10], batch.ErrCorrupt},
	}
	for name, c := range cases {
		if _, err := r.AppendLeader(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if r.Log().LogEndOffset() != 0 {
		t.Fatalf("a rejected batch was written")
	}
}

func TestWaitCommitted(t *testing.T) {
	r := openTest(t, t.TempDir(), nil, nil)
	defer r.Close()
	done := make(chan error, 1)
	go func() { done <- r.WaitCommitted(context.Background(), 0, r.LeaderEpoch()) }()
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 1)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.WaitCommitted(ctx, 5, r.LeaderEpoch()); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait past the end with a cancelled context: %v", err)
	}
}

func TestRetentionPlan(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	segs := []segment.SegmentInfo{
		{BaseOffset: 0, NextOffset: 10, Size: 100, MaxTimestamp: 100_000},
		{BaseOffset: 10, NextOffset: 20, Size: 100, MaxTimestamp: 500_000},
		{BaseOffset: 20, NextOffset: 30, Size: 100, MaxTimestamp: 990_000},
		{BaseOffset: 30, NextOffset: 35, Size: 50, MaxTimestamp: 999_000, Active: true},
	}
	cases := []struct {
		ms, bytes, want int64
	}{
		{-1, -1, -1},      // keep forever
		{600_000, -1, 10}, // only the first is older than 600 s
		{100_000, -1, 20}, // the first two
		{1, -1, 30},       // everything closed, never the active segment
		{-1, 200, 10},     // 350 bytes: dropping the first leaves 250 >= 200, the second would leave 150
		{-1, 250, 10},
		{-1, 260, -1},
		{-1, 1000, -1},
	}
	for _, c := range cases {
		if got := RetentionPlan(segs, now, c.ms, c.bytes); got != c.want {
			t.Errorf("retention.ms=%d retention.bytes=%d: new start %d, want %d", c.ms, c.bytes, got, c.want)
		}
	}
}
