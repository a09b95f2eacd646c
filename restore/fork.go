package restore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/tiering"
)

// A point-in-time fork (`shale topic fork`, POST /v1/fork): a new topic
// whose history is the source's up to a cut, made of remote segment
// records that list the source's immutable objects (no object is copied),
// and written from the cut on into objects of its own. A segment the cut
// lies in is listed with its record's end and size stopping at the cut
// (controlplane.RemoteSegment's object bounds). The objects are
// reference-counted across topics (controlplane/remote_log_refs.go): a
// delete by either topic leaves what the other still lists.
//
// Only uploaded offsets can be forked: a cut past a partition's uploaded
// end is refused, saying up to which offset a fork is possible now.

// ErrForkRefused: a fork that cannot be made as asked (the message says why).
var ErrForkRefused = errors.New("restore: fork refused")

// forkPlan is one partition's part of a fork: the source's records to
// list, the last one cut at cut when straddled.
type forkPlan struct {
	partition int32
	cut       int64
	segs      []controlplane.RemoteSegment
	straddled bool
	// logStart is the source's DeleteRecords log start when it lies
	// above its first listed segment's base; -1 otherwise.
	logStart int64
}

// ForkChain returns the source's CopyFinished segments that hold the
// offsets from the lowest one up to end (inclusive), in offset order, one
// per range (the higher leader epoch where two overlap), and the first
// offset none holds (end+1 when they reach it). segs must be sorted by
// base offset.
func ForkChain(segs []controlplane.RemoteSegment, end int64) (chain []controlplane.RemoteSegment, next int64) {
	start, ok := controlplane.RemoteLogStartOffset(segs)
	if !ok {
		return nil, 0
	}
	next = start
	for next <= end {
		s, ok := controlplane.SegmentForOffset(segs, next)
		if !ok {
			return chain, next
		}
		chain = append(chain, s)
		next = s.EndOffset + 1
	}
	return chain, next
}

// Fork makes the fork req asks for and reports it. ErrForkRefused (and
// controlplane.ErrTopicExists) when it cannot be made as asked; then no
// topic was created, unless the error says otherwise.
func (r *Restorer) Fork(ctx context.Context, req adminapi.ForkRequest) (adminapi.ForkReport, error) {
	src, ok := r.tgt.Store.Topic(req.Source)
	if !ok {
		return adminapi.ForkReport{}, fmt.Errorf("%w: no topic %q", ErrForkRefused, req.Source)
	}
	if _, exists := r.tgt.Store.Topic(req.Name); exists {
		return adminapi.ForkReport{}, fmt.Errorf("%w: %q", controlplane.ErrTopicExists, req.Name)
	}
	if err := controlplane.ValidateTopicName(req.Name); err != nil {
		return adminapi.ForkReport{}, err
	}
	if src.Internal {
		return adminapi.ForkReport{}, fmt.Errorf("%w: %q is an internal topic", ErrForkRefused, req.Source)
	}
	plans := make([]forkPlan, src.Partitions)
	for p := range src.Partitions {
		pl, err := r.planFork(ctx, src, p, req)
		if err != nil {
			return adminapi.ForkReport{}, err
		}
		plans[p] = pl
	}
	id := controlplane.NewTopicID()
	configs := maps.Clone(src.Configs)
	if configs == nil {
		configs = map[string]string{}
	}
	configs["remote.storage.enable"] = "true"
	creating := maps.Clone(configs)
	creating[uncleanConfig] = "false"
	// The bucket's record of the references first: a restore of the fork
	// lists them again (fork_descriptor.go).
	d := ForkDescriptor{FormatVersion: FormatVersion, Topic: req.Name, TopicID: id.Hex(), Source: src.Name, SourceID: src.ID.Hex(),
		Partitions: []ForkDescriptorPartition{}, CreatedAt: time.Now().UTC()}
	for _, pl := range plans {
		dp := ForkDescriptorPartition{Partition: pl.partition, Cut: pl.cut, Segments: []ForkReference{}}
		for _, s := range pl.segs {
			dp.Segments = append(dp.Segments, referenceOf(s))
		}
		d.Partitions = append(d.Partitions, dp)
	}
	if err := r.writeForkDescriptor(ctx, d, id); err != nil {
		return adminapi.ForkReport{}, err
	}
	if _, err := r.tgt.Store.CreateRestoredTopic(ctx, controlplane.Topic{Name: req.Name, ID: id, Partitions: src.Partitions,
		ReplicationFactor: src.ReplicationFactor, Configs: creating}); err != nil {
		return adminapi.ForkReport{}, err
	}
	rep := adminapi.ForkReport{Topic: req.Name, TopicID: id.Hex(), Source: src.Name, SourceID: src.ID.Hex(),
		Partitions: []adminapi.ForkedPartition{}}
	for _, pl := range plans {
		epoch := int32(0)
		for _, s := range pl.segs {
			rec := s
			rec.Objects, rec.SegmentEpochs = slices.Clone(s.Objects), slices.Clone(s.SegmentEpochs)
			rec.TopicID, rec.State, rec.Revision = id, controlplane.CopyFinished, 0
			if _, err := r.tgt.Meta.RecreateRemoteSegment(ctx, rec); err != nil {
				return rep, fmt.Errorf("fork %q partition %d (topic created, delete it and retry): %w", req.Name, pl.partition, err)
			}
			epoch = max(epoch, s.LeaderEpoch)
			for _, e := range s.SegmentEpochs {
				epoch = max(epoch, e.Epoch)
			}
		}
		// The source's records are read again from NATS: a record its
		// leader removed meanwhile (retention) may have lost its objects
		// before this fork's record counted as a reference.
		now, err := r.tgt.Meta.FreshRemoteSegments(ctx, src.ID, pl.partition)
		if err != nil {
			return rep, err
		}
		for _, s := range pl.segs {
			if !slices.ContainsFunc(now, func(c controlplane.RemoteSegment) bool {
				return c.SegmentID == s.SegmentID && c.State == controlplane.CopyFinished
			}) {
				return rep, fmt.Errorf("%w: %q partition %d: the source's segment %s [%d, %d] was removed while forking (topic %q created: delete it and fork at a later offset)",
					ErrForkRefused, src.Name, pl.partition, s.SegmentID, s.BaseOffset, s.EndOffset, req.Name)
			}
		}
		logStart := pl.segs[0].BaseOffset
		if pl.logStart > logStart {
			logStart = pl.logStart
			if err := r.tgt.Meta.RaiseLogStart(ctx, id, pl.partition, logStart, 0); err != nil {
				return rep, err
			}
		}
		if _, err := r.tgt.Store.ActivateRestoredPartition(ctx, id, pl.partition, epoch+1); err != nil {
			return rep, err
		}
		rep.Partitions = append(rep.Partitions, adminapi.ForkedPartition{Partition: pl.partition, Cut: pl.cut,
			LogStartOffset: logStart, Segments: len(pl.segs), Straddled: pl.straddled})
	}
	if err := r.tgt.Store.SetTopicConfigs(ctx, req.Name, configs); err != nil {
		return rep, err
	}
	r.log.Info("forked a topic", "topic", req.Name, "topic_id", id.Hex(), "source", src.Name, "partitions", src.Partitions)
	return rep, nil
}

// planFork resolves partition p's cut and the records that list the
// source's objects below it.
func (r *Restorer) planFork(ctx context.Context, src controlplane.Topic, p int32, req adminapi.ForkRequest) (forkPlan, error) {
	all, err := r.tgt.Meta.FreshRemoteSegments(ctx, src.ID, p)
	if err != nil {
		return forkPlan{}, err
	}
	slices.SortFunc(all, compareSegs)
	end, ok := controlplane.RemoteLogEndOffset(all)
	if !ok {
		return forkPlan{}, fmt.Errorf("%w: %s-%d has no uploaded segment yet: nothing to fork (wait for its first segment to roll and upload)",
			ErrForkRefused, src.Name, p)
	}
	chain, next := ForkChain(all, end)
	if len(chain) == 0 {
		return forkPlan{}, fmt.Errorf("%w: %s-%d has no uploaded segment", ErrForkRefused, src.Name, p)
	}
	start := chain[0].BaseOffset
	// DeleteRecords' log start on the source holds for the fork too: the
	// segments wholly below it are not listed, and the fork records it.
	recorded := int64(-1)
	if ls, ok := r.tgt.Meta.RemoteLogStart(src.ID, p); ok && ls > start {
		recorded, start = ls, ls
		chain = slices.DeleteFunc(chain, func(s controlplane.RemoteSegment) bool { return s.EndOffset < ls })
		if len(chain) == 0 {
			return forkPlan{}, fmt.Errorf("%w: %s-%d: no uploaded segment at or above the log start %d", ErrForkRefused, src.Name, p, ls)
		}
	}
	cut := req.AtOffset
	if req.AtTimestamp != nil {
		ts := *req.AtTimestamp
		i := slices.IndexFunc(chain, func(s controlplane.RemoteSegment) bool { return s.MaxTimestamp >= ts })
		if i < 0 {
			return forkPlan{}, fmt.Errorf("%w: %s-%d: no uploaded record has a timestamp at or after %d (uploaded up to offset %d): a fork is possible now at --at %d at most",
				ErrForkRefused, src.Name, p, ts, next-1, next)
		}
		w, err := r.walkToTimestamp(ctx, chain[i], ts)
		if err != nil {
			return forkPlan{}, err
		}
		cut = w
	}
	switch {
	case cut > next:
		return forkPlan{}, fmt.Errorf("%w: %s-%d: offsets up to %d are uploaded: a fork is possible now at --at %d at most (later offsets are in the leader's local tail until their segment rolls and uploads)",
			ErrForkRefused, src.Name, p, next-1, next)
	case cut <= start:
		return forkPlan{}, fmt.Errorf("%w: %s-%d: the cut %d is at or below the first uploaded offset %d: the fork would hold nothing",
			ErrForkRefused, src.Name, p, cut, start)
	}
	var segs []controlplane.RemoteSegment
	for _, s := range chain {
		if s.BaseOffset < cut {
			segs = append(segs, s)
		}
	}
	pl := forkPlan{partition: p, cut: cut, segs: segs, logStart: recorded}
	last := segs[len(segs)-1]
	if last.EndOffset < cut {
		return pl, nil
	}
	cutRec, snapped, err := r.cutSegment(ctx, last, cut)
	if err != nil {
		return forkPlan{}, err
	}
	pl.cut = snapped
	if snapped == last.BaseOffset {
		pl.segs = segs[:len(segs)-1]
		if len(pl.segs) == 0 {
			return forkPlan{}, fmt.Errorf("%w: %s-%d: the cut %d moves down to its batch's first offset %d, the first uploaded: the fork would hold nothing",
				ErrForkRefused, src.Name, p, cut, snapped)
		}
		return pl, nil
	}
	pl.segs[len(pl.segs)-1], pl.straddled = cutRec, true
	return pl, nil
}

func compareSegs(a, b controlplane.RemoteSegment) int {
	switch {
	case a.BaseOffset != b.BaseOffset:
		return int(min(max(a.BaseOffset-b.BaseOffset, -1), 1))
	case a.LeaderEpoch != b.LeaderEpoch:
		return int(a.LeaderEpoch - b.LeaderEpoch)
	}
	if a.SegmentID < b.SegmentID {
		return -1
	}
	if a.SegmentID > b.SegmentID {
		return 1
	}
	return 0
}

// maxWalkedLog bounds the bytes of one .log object a fork walks.
const maxWalkedLog = 4 << 30

// walkHeaders reads s's .log batch headers in order (up to the record's
// Size), calling fn with each and its position until fn returns false.
func (r *Restorer) walkHeaders(ctx context.Context, s controlplane.RemoteSegment, fn func(h batch.Header, pos int64) bool) error {
	key := tiering.ObjectKey(s, tiering.KindLog)
	if key == "" {
		return fmt.Errorf("%w: segment %s lists no .log object", ErrForkRefused, s.SegmentID)
	}
	rc, err := r.bucket.GetRange(ctx, key, 0, -1)
	if err != nil {
		return fmt.Errorf("restore: read %s: %w", key, err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(io.LimitReader(rc, min(s.Size, maxWalkedLog)), 64<<10)
	var hb [batch.HeaderSize]byte
	for pos := int64(0); pos < s.Size; {
		if _, err := io.ReadFull(br, hb[:]); err != nil {
			return fmt.Errorf("restore: %s: batch header at %d: %w", key, pos, err)
		}
		h, err := batch.ParseHeader(hb[:])
		if err != nil {
			return fmt.Errorf("restore: %s: batch at %d: %w", key, pos, err)
		}
		if !fn(h, pos) {
			return nil
		}
		if _, err := br.Discard(h.Size() - batch.HeaderSize); err != nil {
			return fmt.Errorf("restore: %s: batch at %d: %w", key, pos, err)
		}
		pos += int64(h.Size())
	}
	return nil
}

// walkToTimestamp returns the first offset of the first batch of s whose
// max timestamp is >= ts (a cut by time moves down to its batch's first
// offset, as an offset cut does).
func (r *Restorer) walkToTimestamp(ctx context.Context, s controlplane.RemoteSegment, ts int64) (int64, error) {
	cut := int64(-1)
	err := r.walkHeaders(ctx, s, func(h batch.Header, _ int64) bool {
		if h.MaxTimestamp >= ts && h.LastOffset() >= s.BaseOffset {
			cut = max(h.BaseOffset, s.BaseOffset)
			return false
		}
		return true
	})
	if err == nil && cut < 0 {
		err = fmt.Errorf("restore: segment %s: max timestamp %d recorded, no batch reaches %d", s.SegmentID, s.MaxTimestamp, ts)
	}
	return cut, err
}

// cutSegment returns s's record as a fork lists it when the cut lies in it:
// ending below the batch that holds cut (snapped: that batch's first
// offset, the cut as made), its Size the batch's position, its
// MaxTimestamp the largest before it, its object bounds the objects'.
func (r *Restorer) cutSegment(ctx context.Context, s controlplane.RemoteSegment, cut int64) (controlplane.RemoteSegment, int64, error) {
	snapped, pos, maxTS := int64(-1), int64(0), int64(-1)
	err := r.walkHeaders(ctx, s, func(h batch.Header, at int64) bool {
		if h.LastOffset() >= cut {
			snapped, pos = max(h.BaseOffset, s.BaseOffset), at
			return false
		}
		maxTS = max(maxTS, h.MaxTimestamp)
		return true
	})
	if err != nil {
		return controlplane.RemoteSegment{}, 0, err
	}
	if snapped < 0 {
		return controlplane.RemoteSegment{}, 0, fmt.Errorf("restore: segment %s [%d, %d]: no batch holds offset %d", s.SegmentID, s.BaseOffset, s.EndOffset, cut)
	}
	out := s
	out.Objects, out.SegmentEpochs = slices.Clone(s.Objects), slices.Clone(s.SegmentEpochs)
	out.ObjectEndOffset, out.ObjectSize = s.ObjectBounds()
	out.EndOffset, out.Size, out.MaxTimestamp = snapped-1, pos, maxTS
	out.SegmentEpochs = slices.DeleteFunc(out.SegmentEpochs, func(e controlplane.EpochEntry) bool { return e.StartOffset >= snapped && e.StartOffset > s.BaseOffset })
	return out, snapped, nil
}
