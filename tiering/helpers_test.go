package tiering

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/internal/controlplanetest"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fixture is one node's worth of tiering: NATS, the store, the remote log,
// a filesystem bucket behind a fault injector, and one leader replica of a
// tiered topic.
type fixture struct {
	store  *controlplane.Store
	meta   *controlplane.RemoteLog
	fs     *fsbucket.Bucket
	bucket *faultBucket
	topic  controlplane.Topic
	rep    *partition.Replica
	now    time.Time // the managers' clock
}

func newFixture(t *testing.T, configs map[string]string) *fixture {
	t.Helper()
	ctx := testCtx(t)
	st, meta := controlplanetest.Open(t, ctx, 9092)
	fs, err := fsbucket.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: st, meta: meta, fs: fs, bucket: &faultBucket{Bucket: fs}, now: time.Now()}
	// The tests of the deletion mechanics delete at once; the quarantine
	// tests set remote.delete.grace.ms.
	cfgs := map[string]string{config.RemoteStorageEnable: "true", config.SegmentBytes: "2048",
		config.LocalRetentionBytes: "0", config.RemoteDeleteGraceMs: "0"}
	for k, v := range configs {
		cfgs[k] = v
	}
	if f.topic, err = st.CreateTopic(ctx, "events", 1, 1, cfgs); err != nil {
		t.Fatal(err)
	}
	ps, _ := st.Partition("events", 0)
	f.rep, err = partition.Open(partition.Options{Dir: t.TempDir(), Topic: "events", Partition: 0,
		Config: config.ResolveTopic(cfgs, nil), LeaderEpoch: ps.LeaderEpoch, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	f.rep.SetLeadership(true, ps.LeaderEpoch) // a replica opens as a follower
	t.Cleanup(func() { f.rep.Close() })
	return f
}

func (f *fixture) manager(t *testing.T, mod func(*Config)) *Manager {
	t.Helper()
	cfg := Config{NodeID: 1, Bucket: f.bucket, Store: f.store, Meta: f.meta, Prefix: "tier",
		Replicas:    func() []*partition.Replica { return []*partition.Replica{f.rep} },
		OrphanGrace: time.Minute, Now: func() time.Time { return f.now }, Logger: quiet(),
		TopicDefaults: map[string]string{config.RemoteDeleteGraceMs: "0"}}
	if mod != nil {
		mod(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// produce appends n batches of 10 records each.
func (f *fixture) produce(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		recs := make([]batch.Record, 10)
		for j := range recs {
			recs[j] = batch.Record{Key: fmt.Appendf(nil, "k%d", j), Value: fmt.Appendf(nil, "value-%d-%d", i, j), TimestampDelta: int64(j)}
		}
		opts := batch.NoProducer()
		opts.FirstTimestamp = time.Now().UnixMilli()
		b, err := batch.Build(nil, opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.rep.AppendLeader(b); err != nil {
			t.Fatal(err)
		}
	}
}

// putStray puts an object no record references (an orphan) under the
// partition's prefix, as an upload cut off would leave, and returns its key.
func (f *fixture) putStray(t *testing.T) string {
	t.Helper()
	stray := SegmentKey(PartitionPrefix("tier", "events", f.topic.ID, 0), 0, 0, controlplane.NewSegmentID(), KindLog)
	if err := f.fs.Put(context.Background(), stray, strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	return stray
}

// bucketKeys lists every object in the bucket, sorted.
func bucketKeys(t *testing.T, b objstore.Bucket) []string {
	t.Helper()
	var keys []string
	if err := b.List(context.Background(), "", func(a objstore.Attrs) error {
		keys = append(keys, a.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	return keys
}

// checkNoOrphans asserts that every object is referenced by a CopyFinished
// record and every such record's objects exist.
func (f *fixture) checkNoOrphans(t *testing.T) {
	t.Helper()
	f.checkReferenced(t, nil)
}

// checkReferenced asserts that every record is CopyFinished, that every
// object is one of a record's or of also, and that each of those exists.
func (f *fixture) checkReferenced(t *testing.T, also []string) {
	t.Helper()
	ref := map[string]bool{}
	for _, rec := range f.meta.ListRemoteSegments(f.topic.ID, 0) {
		if rec.State != controlplane.CopyFinished {
			t.Errorf("record %s left in %v", rec.SegmentID, rec.State)
		}
		for _, k := range rec.Objects {
			ref[k] = true
			if _, err := f.fs.Stat(context.Background(), k); err != nil {
				t.Errorf("object %s of record %s: %v", k, rec.SegmentID, err)
			}
		}
	}
	for _, k := range also {
		ref[k] = true
		if _, err := f.fs.Stat(context.Background(), k); err != nil {
			t.Errorf("referenced object %s: %v", k, err)
		}
	}
	for _, k := range bucketKeys(t, f.fs) {
		if !ref[k] {
			t.Errorf("unreferenced object %s", k)
		}
	}
}

// faultBucket wraps a bucket with injected failures.
type faultBucket struct {
	objstore.Bucket
	mu   sync.Mutex
	down bool // every call fails
	// afterPut runs after a successful Put (cut-off tests).
	afterPut func(key string)
	// transientPuts: this many Puts of keys ending in transientSuffix read
	// part of their body and then fail with a retriable error.
	transientPuts   int
	transientSuffix string
}

var errInjected = fmt.Errorf("injected bucket failure")

func (b *faultBucket) setDown(v bool) { b.mu.Lock(); b.down = v; b.mu.Unlock() }
func (b *faultBucket) isDown() bool   { b.mu.Lock(); defer b.mu.Unlock(); return b.down }

func (b *faultBucket) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if b.isDown() {
		return errInjected
	}
	b.mu.Lock()
	fail := b.transientPuts > 0 && strings.HasSuffix(key, b.transientSuffix)
	if fail {
		b.transientPuts--
	}
	b.mu.Unlock()
	if fail {
		_, _ = io.CopyN(io.Discard, r, size/2)
		return fmt.Errorf("%w: injected 503 after half the body", objstore.ErrTransient)
	}
	if err := b.Bucket.Put(ctx, key, r, size); err != nil {
		return err
	}
	b.mu.Lock()
	hook := b.afterPut
	b.mu.Unlock()
	if hook != nil {
		hook(key)
	}
	return nil
}

func (b *faultBucket) Delete(ctx context.Context, key string) error {
	if b.isDown() {
		return errInjected
	}
	return b.Bucket.Delete(ctx, key)
}

func (b *faultBucket) List(ctx context.Context, prefix string, fn func(objstore.Attrs) error) error {
	if b.isDown() {
		return errInjected
	}
	return b.Bucket.List(ctx, prefix, fn)
}

func hasSuffix(keys []string, s string) int {
	n := 0
	for _, k := range keys {
		if strings.HasSuffix(k, s) {
			n++
		}
	}
	return n
}
