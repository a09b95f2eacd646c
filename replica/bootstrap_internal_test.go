package replica

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering"
)

func remoteSeg(id string, base, end int64, epoch int32, st controlplane.RemoteSegmentState) controlplane.RemoteSegment {
	return controlplane.RemoteSegment{SegmentID: id, BaseOffset: base, EndOffset: end, LeaderEpoch: epoch, State: st}
}

func TestPlanBootstrap(t *testing.T) {
	const cf, started, deleting = controlplane.CopyFinished, controlplane.CopyStarted, controlplane.DeleteStarted
	// The remote log of a partition whose leader keeps [200, ...) locally:
	// segments up to 199, one being re-uploaded by a newer leader, one
	// being deleted.
	segs := []controlplane.RemoteSegment{
		remoteSeg("a", 0, 99, 1, deleting),
		remoteSeg("b", 100, 199, 1, cf),
		remoteSeg("c", 100, 199, 2, started), // not finished: never chosen
	}
	for _, c := range []struct {
		name string
		in   bootstrapInput
		want bootstrapPlan
		err  error
	}{
		{name: "holds L-1", in: bootstrapInput{leo: 0, localStart: 200, logStart: 0, remoteEnabled: true, tierOpen: true, segs: segs},
			want: bootstrapPlan{offset: 200, fromRemote: true, segment: segs[1]}},
		{name: "holds L-1, remote storage since disabled", in: bootstrapInput{leo: 50, localStart: 200, logStart: 100, tierOpen: true, segs: segs},
			want: bootstrapPlan{offset: 200, fromRemote: true, segment: segs[1]}},
		{name: "holds L-1 at the log start", in: bootstrapInput{leo: 50, localStart: 200, logStart: 200, remoteEnabled: true, tierOpen: true, segs: segs},
			want: bootstrapPlan{offset: 200, fromRemote: true, segment: segs[1]}},
		{name: "segment ends above L-1", in: bootstrapInput{leo: 0, localStart: 150, logStart: 0, remoteEnabled: true, tierOpen: true, segs: segs},
			want: bootstrapPlan{offset: 200, fromRemote: true, segment: segs[1]}},
		{name: "two finished copies: the newer leader's", in: bootstrapInput{leo: 0, localStart: 200, remoteEnabled: true, tierOpen: true,
			segs: []controlplane.RemoteSegment{remoteSeg("b", 100, 199, 1, cf), remoteSeg("c", 100, 199, 2, cf)}},
			want: bootstrapPlan{offset: 200, fromRemote: true, segment: remoteSeg("c", 100, 199, 2, cf)}},
		{name: "leader reaches our end", in: bootstrapInput{leo: 200, localStart: 200, remoteEnabled: true, tierOpen: true, segs: segs}, err: errNotBehind},
		{name: "leader starts below our end", in: bootstrapInput{leo: 300, localStart: 200, logStart: 200, tierOpen: true}, err: errNotBehind},
		{name: "tier not open", in: bootstrapInput{leo: 0, localStart: 200, remoteEnabled: true}, err: errNoRemoteTier},
		{name: "tier not open, remote storage disabled", in: bootstrapInput{leo: 0, localStart: 200, logStart: 200}, err: errNoRemoteTier},
		{name: "only a segment being deleted holds L-1", in: bootstrapInput{leo: 0, localStart: 100, logStart: 0, remoteEnabled: true, tierOpen: true, segs: segs},
			err: errNoRemoteSegment},
		{name: "only an unfinished copy holds L-1", in: bootstrapInput{leo: 0, localStart: 200, logStart: 100, remoteEnabled: true, tierOpen: true, segs: segs[2:]},
			err: errNoRemoteSegment},
		{name: "data below L retained, metadata not here yet", in: bootstrapInput{leo: 0, localStart: 300, logStart: 100, remoteEnabled: true, tierOpen: true, segs: segs},
			err: errNoRemoteSegment},
		{name: "nothing retained below L (DeleteRecords before tiering)", in: bootstrapInput{leo: 40, localStart: 300, logStart: 300, remoteEnabled: true, tierOpen: true, segs: segs},
			want: bootstrapPlan{offset: 300}},
		{name: "no remote storage: restart at L with no history", in: bootstrapInput{leo: 40, localStart: 300, logStart: 300, tierOpen: true},
			want: bootstrapPlan{offset: 300}},
		{name: "no remote storage, unrelated segments", in: bootstrapInput{leo: 40, localStart: 300, logStart: 300, tierOpen: true, segs: segs},
			want: bootstrapPlan{offset: 300}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := planBootstrap(c.in)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.offset != c.want.offset || got.fromRemote != c.want.fromRemote ||
				got.segment.SegmentID != c.want.segment.SegmentID || got.segment.LeaderEpoch != c.want.segment.LeaderEpoch {
				t.Fatalf("plan %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestBootstrapRetry(t *testing.T) {
	var r bootstrapRetry
	now := time.Unix(1_700_000_000, 0)
	wantPause := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	var warns []int
	total := time.Duration(0)
	for i := 0; i < 40; i++ {
		pause, level := r.failed(now)
		if i < len(wantPause) && pause != wantPause[i] {
			t.Fatalf("failure %d: pause %v, want %v", i+1, pause, wantPause[i])
		}
		if pause > bootstrapRetryMax {
			t.Fatalf("failure %d: pause %v above the cap", i+1, pause)
		}
		switch level {
		case slog.LevelWarn:
			warns = append(warns, r.failures)
		case slog.LevelDebug:
		default:
			t.Fatalf("failure %d logged at %v", i+1, level)
		}
		now = now.Add(pause)
		total += pause
	}
	// Failures 1..8 at 0, 0.5, 1.5, 3.5, 7.5, 15.5, 25.5, 35.5 s, then
	// every 10 s: Warn at the first, then at the first failure 30 s or
	// more after the last Warn.
	want := []int{1, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35, 38}
	if !slices.Equal(warns, want) {
		t.Fatalf("warned at failures %v, want %v (over %v)", warns, want, total)
	}
	if r.failures != 40 {
		t.Fatalf("failures %d", r.failures)
	}
	// A success resets it: the next failure warns again after the minimum pause.
	r = bootstrapRetry{}
	if pause, level := r.failed(now); pause != bootstrapRetryMin || level != slog.LevelWarn {
		t.Fatalf("after a reset: %v %v", pause, level)
	}
}

// TestReadRemoteTail reads a remote segment's epochs and producer snapshot
// from a filesystem bucket laid out as tiering writes it.
func TestReadRemoteTail(t *testing.T) {
	ctx := context.Background()
	b, err := fsbucket.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	prefix := tiering.PartitionPrefix("", "events", controlplane.TopicID{1}, 3)
	put := func(key string, data []byte) {
		t.Helper()
		if err := b.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	ps := partition.NewProducerState()
	ps.Update(&batch.Header{BaseOffset: 180, LastOffsetDelta: 4, ProducerID: 7, ProducerEpoch: 0, BaseSequence: 10, MaxTimestamp: 1})
	snap := ps.Encode()
	history := []controlplane.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 150}}
	seg := remoteSeg("s1", 100, 199, 2, controlplane.CopyFinished)
	seg.SegmentEpochs = []controlplane.EpochEntry{{Epoch: 2, StartOffset: 150}}
	for _, k := range []tiering.Kind{tiering.KindLog, tiering.KindEpochs, tiering.KindSnapshot} {
		seg.Objects = append(seg.Objects, tiering.SegmentKey(prefix, 100, 2, "s1", k))
	}
	put(seg.Objects[0], []byte("log bytes"))
	put(seg.Objects[1], tiering.EncodeEpochs(history))
	put(seg.Objects[2], snap)

	tail, err := readRemoteTail(ctx, b, seg)
	if err != nil {
		t.Fatal(err)
	}
	if tail.Offset != 200 || !bytes.Equal(tail.ProducerSnapshot, snap) {
		t.Fatalf("tail at %d with %d snapshot bytes, want 200 and %d", tail.Offset, len(tail.ProducerSnapshot), len(snap))
	}
	if want := []segment.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 150}}; !slices.Equal(tail.Epochs, want) {
		t.Fatalf("epochs %v, want the epochs object's %v", tail.Epochs, want)
	}
	if got, err := partition.DecodeProducerState(tail.ProducerSnapshot); err != nil || got.Len() != 1 {
		t.Fatalf("snapshot decodes to %v producers, %v", got, err)
	}

	// No epochs and no snapshot object: the metadata's history, no snapshot.
	bare := seg
	bare.Objects = seg.Objects[:1]
	tail, err = readRemoteTail(ctx, b, bare)
	if err != nil {
		t.Fatal(err)
	}
	if want := []segment.EpochEntry{{Epoch: 2, StartOffset: 150}}; !slices.Equal(tail.Epochs, want) || tail.ProducerSnapshot != nil || tail.Offset != 200 {
		t.Fatalf("bare segment: %+v", tail)
	}

	// An object the record lists but the bucket lacks, and a malformed
	// epochs object, are errors, never an empty history.
	missing := seg
	missing.Objects = slices.Clone(seg.Objects)
	missing.Objects[2] = tiering.SegmentKey(prefix, 100, 2, "gone", tiering.KindSnapshot)
	if _, err := readRemoteTail(ctx, b, missing); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("missing snapshot: %v", err)
	}
	bad := seg
	bad.Objects = slices.Clone(seg.Objects)
	bad.Objects[1] = tiering.SegmentKey(prefix, 100, 2, "bad", tiering.KindEpochs)
	put(bad.Objects[1], []byte("0\n2\n0 0\n"))
	if _, err := readRemoteTail(ctx, b, bad); err == nil {
		t.Fatal("truncated epochs object read without error")
	}
}
