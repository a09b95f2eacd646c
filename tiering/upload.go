package tiering

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment"
)

// ErrSegmentGone: a local segment file vanished, or changed, before its
// upload started (truncation, retention or compaction); the upload is
// abandoned and tried again on the next pass.
var ErrSegmentGone = errors.New("tiering: local segment file is gone")

// ErrBucket marks a failed bucket request of an upload or a remote delete
// (as opposed to a metadata write or a local file): while they fail the
// bucket counts as unreachable (Stats.BucketUnreachable).
var ErrBucket = errors.New("tiering: bucket request failed")

// target is one partition this node leads, as the manager sees it in one pass.
type target struct {
	rep   *partition.Replica
	id    controlplane.TopicID
	epoch int32 // the replica's leader epoch: the writer's fencing token
}

// object is one object to put: from a file or from bytes.
type object struct {
	kind Kind
	key  string
	file *os.File // read from this file (its first size bytes) when data is nil
	data []byte
	size int64
}

// segmentFiles are the .log, .index and .timeindex of one closed segment,
// opened together before its upload starts, so that every Put reads one
// version of the segment: a compaction swap, retention or a truncation
// that renames or removes the files meanwhile leaves these descriptors on
// the files as they were (Kafka's RemoteLogManager copies from the
// segment's open files too).
type segmentFiles [3]*os.File

var segmentSuffixes = [3]string{".log", ".index", ".timeindex"}

// openSegmentFiles opens the three files of the segment at base and checks
// that, once all are open, each path still names the file opened (no swap
// ran between two opens: then the three would not be one version).
// ErrSegmentGone when a file is missing or was swapped.
func openSegmentFiles(rep *partition.Replica, base int64) (segmentFiles, error) {
	var fs segmentFiles
	for i, suf := range segmentSuffixes {
		f, err := os.Open(rep.SegmentPath(base, suf))
		if err != nil {
			fs.close()
			return segmentFiles{}, fmt.Errorf("%w: %v", ErrSegmentGone, err)
		}
		fs[i] = f
	}
	for i, suf := range segmentSuffixes {
		opened, err1 := fs[i].Stat()
		named, err2 := os.Stat(rep.SegmentPath(base, suf))
		if err1 != nil || err2 != nil || !os.SameFile(opened, named) {
			fs.close()
			return segmentFiles{}, fmt.Errorf("%w: %s changed while its upload opened it", ErrSegmentGone, suf)
		}
	}
	return fs, nil
}

func (fs segmentFiles) close() {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// segmentEpochs restricts the log's leader-epoch history to one segment: the
// entry in force at its base offset, then those starting inside it.
func segmentEpochs(all []segment.EpochEntry, base, next int64) []controlplane.EpochEntry {
	var out []controlplane.EpochEntry
	for _, e := range all {
		if e.StartOffset >= next {
			break
		}
		if e.StartOffset <= base {
			out = out[:0]
		}
		out = append(out, e)
	}
	return out
}

// historyBefore returns the entries of the leader-epoch history that start
// below next.
func historyBefore(all []segment.EpochEntry, next int64) []controlplane.EpochEntry {
	var out []controlplane.EpochEntry
	for _, e := range all {
		if e.StartOffset >= next {
			break
		}
		out = append(out, e)
	}
	return out
}

// upload copies one closed segment and commits its metadata: CopyStarted
// (listing every key it will write), the objects, then CopyFinished. On a
// failure after CopyStarted it tries to delete what it wrote and retire the
// record; what it cannot clean up the reconciler does later.
func (m *Manager) upload(ctx context.Context, t target, seg segment.SegmentInfo, prefix string) (controlplane.RemoteSegment, error) {
	segID := controlplane.NewSegmentID()
	key := func(k Kind) string { return SegmentKey(prefix, seg.BaseOffset, t.epoch, segID, k) }
	files, err := openSegmentFiles(t.rep, seg.BaseOffset)
	if err != nil {
		return controlplane.RemoteSegment{}, err
	}
	defer files.close()
	var objs []object
	for i, kind := range [3]Kind{KindLog, KindIndex, KindTimeIndex} {
		st, err := files[i].Stat()
		if err != nil {
			return controlplane.RemoteSegment{}, fmt.Errorf("%w: %v", ErrSegmentGone, err)
		}
		objs = append(objs, object{kind: kind, key: key(kind), file: files[i], size: st.Size()})
	}
	if objs[0].size != seg.Size {
		// Compacted or truncated since the pass listed it: the offsets and
		// timestamps listed may not be this file's. The next pass lists it again.
		return controlplane.RemoteSegment{}, fmt.Errorf("%w: segment %d holds %d bytes, listed with %d", ErrSegmentGone, seg.BaseOffset, objs[0].size, seg.Size)
	}
	// The aborted transactions whose markers the segment holds, from the
	// log's memory of its .txnindex: final, since the segment ends below
	// the last stable offset (UploadPlan).
	if txns := t.rep.Log().SegmentAbortedTxns(seg.BaseOffset); len(txns) > 0 {
		var ti []byte
		for _, a := range txns {
			ti = a.AppendTo(ti)
		}
		objs = append(objs, object{kind: KindTxnIndex, key: key(KindTxnIndex), data: ti, size: int64(len(ti))})
	}
	history := t.rep.Log().Epochs()
	epochs := segmentEpochs(history, seg.BaseOffset, seg.NextOffset)
	// The epochs object is the whole history up to the segment's end, from
	// the log start (Kafka uploads the leader-epoch checkpoint so): a
	// follower rebuilt from this segment places every retained epoch. The
	// metadata's SegmentEpochs are the segment's own entries.
	ep := EncodeEpochs(historyBefore(history, seg.NextOffset))
	objs = append(objs, object{kind: KindEpochs, key: key(KindEpochs), data: ep, size: int64(len(ep))})
	snap, ok, err := t.rep.SnapshotAt(seg.NextOffset)
	if err != nil {
		return controlplane.RemoteSegment{}, err
	}
	if !ok {
		// Producer state as of an earlier offset: a replica rebuilt from
		// this segment would miss the producers written in between.
		if p, at, found := t.rep.SnapshotAtOrBelow(seg.NextOffset); found {
			if snap, err = os.ReadFile(p); err == nil {
				m.log.Warn("no producer snapshot at the segment's end; uploading an older one", "topic", t.rep.Topic(),
					"partition", t.rep.Partition(), "segment_end", seg.NextOffset, "snapshot_at", at)
				ok = true
			}
		}
	}
	if ok {
		objs = append(objs, object{kind: KindSnapshot, key: key(KindSnapshot), data: snap, size: int64(len(snap))})
	}
	man := Manifest{Topic: t.rep.Topic(), TopicID: t.id.Hex(), Partition: t.rep.Partition(), SegmentID: segID,
		BaseOffset: seg.BaseOffset, EndOffset: seg.NextOffset - 1, MaxTimestamp: seg.MaxTimestamp,
		LeaderEpoch: t.epoch, SegmentEpochs: epochs, Objects: map[Kind]ManifestObject{}, CreatedAt: m.now().UTC(),
		HighWatermark: t.rep.HighWatermark()}
	for _, o := range objs {
		man.Objects[o.kind] = ManifestObject{Key: o.key, Size: o.size}
	}
	md := encodeManifest(man)
	objs = append(objs, object{kind: KindManifest, key: key(KindManifest), data: md, size: int64(len(md))})

	rec := controlplane.RemoteSegment{TopicID: t.id, Partition: t.rep.Partition(), SegmentID: segID,
		BaseOffset: seg.BaseOffset, EndOffset: seg.NextOffset - 1, MaxTimestamp: seg.MaxTimestamp,
		Size: objs[0].size, LeaderEpoch: t.epoch, SegmentEpochs: epochs, State: controlplane.CopyStarted}
	for _, o := range objs {
		rec.Objects = append(rec.Objects, o.key)
	}
	rec, err = m.meta.PutRemoteSegment(ctx, rec, 0)
	if err != nil {
		return controlplane.RemoteSegment{}, fmt.Errorf("tiering: copy started: %w", err)
	}
	for _, o := range objs {
		if err := m.put(ctx, o); err != nil {
			m.abandon(ctx, t, rec)
			return controlplane.RemoteSegment{}, fmt.Errorf("tiering: put %s: %w", o.key, err)
		}
		m.stats.bytesUploaded.Add(uint64(o.size))
	}
	done := rec
	done.State = controlplane.CopyFinished
	if done, err = m.meta.PutRemoteSegment(ctx, done, rec.Revision); err != nil {
		if !errors.Is(err, controlplane.ErrFenced) {
			m.abandon(ctx, t, rec)
		}
		return controlplane.RemoteSegment{}, fmt.Errorf("tiering: copy finished: %w", err)
	}
	return done, nil
}

func (m *Manager) put(ctx context.Context, o object) error {
	if o.data != nil {
		if err := m.bucket.Put(ctx, o.key, bytes.NewReader(o.data), o.size); err != nil {
			return fmt.Errorf("%w: %w", ErrBucket, err)
		}
		return nil
	}
	// A closed segment's file does not change (a swap or deletion renames
	// it away, the descriptor stays on it); read exactly the size recorded.
	// A SectionReader seeks, so that objstore.WithRetries can retry the Put
	// (an io.LimitReader got one attempt).
	if err := m.bucket.Put(ctx, o.key, io.NewSectionReader(o.file, 0, o.size), o.size); err != nil {
		return fmt.Errorf("%w: %w", ErrBucket, err)
	}
	return nil
}

// abandon cleans up a failed upload at once if it can (best effort).
func (m *Manager) abandon(ctx context.Context, t target, rec controlplane.RemoteSegment) {
	if err := m.deleteRemote(ctx, t.epoch, rec); err != nil {
		m.log.Info("failed upload left for the reconciler", "topic", t.rep.Topic(), "partition", t.rep.Partition(),
			"segment", rec.SegmentID, "err", err)
	}
}

// deleteObjects deletes keys on behalf of topic id, except those a record
// or quarantine entry of another topic lists (a fork's references to its
// source's objects, or the source's to objects a fork lists:
// controlplane/remote_log_refs.go): the last topic that lists an object
// deletes it.
func (m *Manager) deleteObjects(ctx context.Context, id controlplane.TopicID, keys []string) error {
	for _, k := range keys {
		if m.meta.SharedWithOtherTopics(k, id) {
			m.stats.sharedKept.Add(1)
			continue
		}
		if err := m.bucket.Delete(ctx, k); err != nil {
			return fmt.Errorf("%w: delete %s: %w", ErrBucket, k, err)
		}
	}
	return nil
}

// deleteRemote runs a record through DeleteStarted, deletes its objects, then
// DeleteFinished and removes the record. A record already in DeleteStarted
// or DeleteFinished resumes where it stopped. epoch is the writer's epoch.
func (m *Manager) deleteRemote(ctx context.Context, epoch int32, rec controlplane.RemoteSegment) error {
	var err error
	if rec.State == controlplane.CopyStarted || rec.State == controlplane.CopyFinished {
		rec.State, rec.LeaderEpoch = controlplane.DeleteStarted, max(rec.LeaderEpoch, epoch)
		if rec, err = m.meta.PutRemoteSegment(ctx, rec, rec.Revision); err != nil {
			return err
		}
	}
	if rec.State == controlplane.DeleteStarted {
		if err := m.deleteObjects(ctx, rec.TopicID, rec.Objects); err != nil {
			return err
		}
		rec.State, rec.LeaderEpoch = controlplane.DeleteFinished, max(rec.LeaderEpoch, epoch)
		if rec, err = m.meta.PutRemoteSegment(ctx, rec, rec.Revision); err != nil {
			return err
		}
	}
	return m.meta.DeleteRemoteSegmentRecord(ctx, rec)
}
