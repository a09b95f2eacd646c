package restore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/tiering"
)

// Target is the cluster a restore writes to: its control plane, remote
// segment metadata and producer id allocator.
type Target struct {
	Store       *controlplane.Store
	Meta        *controlplane.RemoteLog
	ProducerIDs *controlplane.ProducerIDs
}

// Restorer restores topics from one bucket into one cluster.
type Restorer struct {
	bucket objstore.Bucket
	prefix string
	tgt    Target
	log    *slog.Logger
}

// New returns a Restorer of bucket (keys under prefix) into tgt.
func New(bucket objstore.Bucket, prefix string, tgt Target, log *slog.Logger) *Restorer {
	if log == nil {
		log = slog.Default()
	}
	return &Restorer{bucket: bucket, prefix: prefix, tgt: tgt, log: log}
}

// maxLogObject bounds a __consumer_offsets .log object read whole.
const maxLogObject = 1 << 30

// uncleanConfig is turned off while a restored topic has no leader, so
// that the controller does not elect one before its records are written.
const uncleanConfig = "unclean.leader.election.enable"

// Run restores what req asks for and reports it. Only a bucket that
// cannot be listed or read fails the whole run; a topic that cannot be
// restored is reported with its error and the others go on.
func (r *Restorer) Run(ctx context.Context, req adminapi.RestoreRequest) (adminapi.RestoreReport, error) {
	inv, err := Scan(ctx, r.bucket, r.prefix)
	if err != nil {
		return adminapi.RestoreReport{}, err
	}
	rep := adminapi.RestoreReport{FormatVersion: inv.FormatVersion, DryRun: req.DryRun, Topics: []adminapi.RestoredTopic{},
		Problems: inv.Problems}
	if rep.Problems == nil {
		rep.Problems = []string{}
	}
	offsets, source, err := r.groupOffsets(ctx, inv)
	if err != nil {
		return adminapi.RestoreReport{}, err
	}
	rep.GroupOffsets = source
	byName := newestByName(inv)
	names := slices.Clone(req.Topics)
	if req.All {
		for name := range byName {
			if !isInternal(name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		img, ok := byName[name]
		if !ok {
			rep.Topics = append(rep.Topics, adminapi.RestoredTopic{Topic: name, Status: "not found",
				Missing: []string{"no uploaded segment and no descriptor of the topic in the bucket"}})
			continue
		}
		if isInternal(name) {
			rep.Topics = append(rep.Topics, adminapi.RestoredTopic{Topic: name, TopicID: img.ID.Hex(), Status: "refused",
				Error: "internal topics are not restored as topics (their coordinators rebuild them; __consumer_offsets feeds the group offsets)"})
			continue
		}
		rep.Topics = append(rep.Topics, r.restoreTopic(ctx, img, offsets, req.DryRun))
	}
	return rep, nil
}

func isInternal(name string) bool {
	return name == OffsetsTopic || name == "__transaction_state" || name == "__share_group_state"
}

// newestByName picks, for each topic name, the topic id of the newest
// upload or descriptor (a name deleted and created again has several).
func newestByName(inv *Inventory) map[string]*TopicImage {
	out := map[string]*TopicImage{}
	newest := map[string]time.Time{}
	for _, t := range inv.Topics {
		var at time.Time
		if t.Descriptor != nil {
			at = t.Descriptor.CreatedAt
		}
		for _, ms := range t.Partitions {
			for _, m := range ms {
				if m.CreatedAt.After(at) {
					at = m.CreatedAt
				}
			}
		}
		if cur, ok := out[t.Name]; !ok || at.After(newest[t.Name]) || (at.Equal(newest[t.Name]) && t.ID.Hex() > cur.ID.Hex()) {
			out[t.Name], newest[t.Name] = t, at
		}
	}
	return out
}

// plan reads the epoch history of the segment of ms that ends last and
// chooses the chain (PlanPartition). An unreadable history is reported in
// missing and the chain is chosen without it.
func (r *Restorer) plan(ctx context.Context, ms []tiering.Manifest, missing *[]string, what string) PartitionPlan {
	if len(ms) == 0 {
		return PartitionPlan{}
	}
	last := ms[0]
	for _, m := range ms[1:] {
		if m.EndOffset > last.EndOffset || (m.EndOffset == last.EndOffset && m.LeaderEpoch > last.LeaderEpoch) {
			last = m
		}
	}
	var history []controlplane.EpochEntry
	if o, ok := last.Objects[tiering.KindEpochs]; ok {
		data, err := readSmall(ctx, r.bucket, o.Key)
		if err == nil {
			history, err = tiering.DecodeEpochs(data)
		}
		if err != nil {
			history = nil
			*missing = append(*missing, fmt.Sprintf("%s: the leader-epoch history of the last upload (%v): lineage not checked", what, err))
		}
	} else {
		*missing = append(*missing, fmt.Sprintf("%s: the last upload has no leader-epoch history: lineage not checked", what))
	}
	return PlanPartition(ms, history)
}

// groupOffsets replays the uploaded segments of the newest
// __consumer_offsets in the bucket.
func (r *Restorer) groupOffsets(ctx context.Context, inv *Inventory) (*OffsetLog, string, error) {
	img := newestByName(inv)[OffsetsTopic]
	if img == nil {
		return nil, "none: __consumer_offsets was not tiered (remote.storage.enable), so no committed offset is in the bucket", nil
	}
	log := NewOffsetLog()
	var last time.Time
	var bad []string
	for _, p := range img.PartitionIDs() {
		var missing []string
		plan := r.plan(ctx, img.Partitions[p], &missing, fmt.Sprintf("%s-%d", OffsetsTopic, p))
		for _, m := range plan.Segments {
			data, err := readLimited(ctx, r.bucket, m.Objects[tiering.KindLog].Key, maxLogObject)
			if err != nil {
				return nil, "", err
			}
			if err := log.Add(data); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", m.Objects[tiering.KindLog].Key, err))
			}
		}
		if plan.LastUpload.After(last) {
			last = plan.LastUpload
		}
	}
	source := fmt.Sprintf("the uploaded segments of %s (topic id %s), the newest uploaded at %s; commits after it are lost",
		OffsetsTopic, img.ID.Hex(), last.UTC().Format(time.RFC3339))
	if len(bad) > 0 {
		source += "; unreadable: " + strings.Join(bad, "; ")
	}
	return log, source, nil
}

func (r *Restorer) restoreTopic(ctx context.Context, img *TopicImage, offsets *OffsetLog, dryRun bool) adminapi.RestoredTopic {
	out := adminapi.RestoredTopic{Topic: img.Name, TopicID: img.ID.Hex(), Status: "planned", Missing: []string{},
		GroupOffsets: []adminapi.RestoredGroupOffset{}}
	if cur, ok := r.tgt.Store.Topic(img.Name); ok {
		if cur.ID != img.ID {
			out.Status, out.Error = "refused", fmt.Sprintf("a topic %q with another id (%s) exists; delete it first", img.Name, cur.ID.Hex())
			return out
		}
		if active(r.tgt.Store.Partitions(img.Name)) {
			out.Status, out.Partitions, out.ReplicationFactor = "exists", cur.Partitions, cur.ReplicationFactor
			return out
		}
	}
	found := img.PartitionIDs()
	if d := img.Descriptor; d != nil {
		out.Descriptor = true
		out.Partitions, out.ReplicationFactor, out.Configs = d.Partitions, d.ReplicationFactor, maps.Clone(d.Configs)
	} else {
		out.Partitions, out.ReplicationFactor = 1, 3
		if len(found) > 0 {
			out.Partitions = found[len(found)-1] + 1
		}
		out.Configs = map[string]string{}
		out.Missing = append(out.Missing, fmt.Sprintf("the topic descriptor: %d partitions from the highest partition uploaded "+
			"(partitions above it that never uploaded are not known), replication factor 3, no config but remote.storage.enable", out.Partitions))
	}
	if out.Configs == nil {
		out.Configs = map[string]string{}
	}
	if v, ok := out.Configs["remote.storage.enable"]; ok && v != "true" {
		out.Missing = append(out.Missing, "remote.storage.enable was "+v+" in the descriptor: set to true, since the data is in the bucket")
	}
	out.Configs["remote.storage.enable"] = "true"
	for _, p := range found {
		if p >= out.Partitions {
			out.Missing = append(out.Missing, fmt.Sprintf("partition %d has uploads but the descriptor says %d partitions: left out", p, out.Partitions))
		}
	}
	plans := make([]PartitionPlan, out.Partitions)
	for p := range out.Partitions {
		ms := img.Partitions[p]
		what := fmt.Sprintf("partition %d", p)
		if len(ms) == 0 {
			out.Missing = append(out.Missing, what+": no uploaded segment: restored empty")
		}
		plans[p] = r.plan(ctx, ms, &out.Missing, what)
		pl := plans[p]
		rp := adminapi.RestoredPartition{Partition: p, Segments: len(pl.Segments), LogStartOffset: pl.LogStart,
			NextOffset: pl.NextOffset, LeaderEpoch: leadEpoch(pl), Skipped: len(pl.Skipped), LastUpload: pl.LastUpload,
			HighWatermarkAtLastUpload: pl.HighWatermark, NotUploaded: pl.NotUploaded()}
		for _, g := range pl.Gaps {
			rp.Gaps = append(rp.Gaps, adminapi.OffsetRange(g))
			out.Missing = append(out.Missing, fmt.Sprintf("%s: offsets %d..%d: no uploaded segment holds them (lost)", what, g.First, g.Last))
		}
		switch n := pl.NotUploaded(); {
		case n > 0:
			out.Missing = append(out.Missing, fmt.Sprintf("%s: %d offsets from %d were never uploaded (high watermark %d at the last upload, %s), and whatever came after: lost",
				what, n, pl.NextOffset, pl.HighWatermark, pl.LastUpload.UTC().Format(time.RFC3339)))
		case n < 0 && len(pl.Segments) > 0:
			out.Missing = append(out.Missing, fmt.Sprintf("%s: the high watermark at the last upload is not recorded: the tail after offset %d is lost, by an unknown amount",
				what, pl.NextOffset-1))
		}
		out.Partition = append(out.Partition, rp)
	}
	if offsets != nil {
		for _, g := range offsets.Offsets(img.Name) {
			if g.Partition < 0 || g.Partition >= out.Partitions {
				continue
			}
			ro := adminapi.RestoredGroupOffset{Group: g.Group, Partition: g.Partition, Offset: g.Offset, Committed: g.Offset,
				LeaderEpoch: g.LeaderEpoch, Metadata: g.Metadata}
			if end := plans[g.Partition].NextOffset; ro.Offset > end {
				ro.Offset = end
				out.Missing = append(out.Missing, fmt.Sprintf("group %s: committed offset %d of partition %d is past the restored end %d: restored as %d",
					g.Group, g.Offset, g.Partition, end, end))
			}
			out.GroupOffsets = append(out.GroupOffsets, ro)
		}
	}
	refs, err := r.forkReferences(ctx, img, &out)
	if err != nil {
		out.Status, out.Error = "refused", err.Error()
		return out
	}
	if dryRun {
		return out
	}
	if err := r.apply(ctx, img, out, plans, refs); err != nil {
		out.Status, out.Error = "refused", err.Error()
		return out
	}
	out.Status = "restored"
	return out
}

// leadEpoch is the epoch a restored partition leads at: above every
// restored one (0 for a partition with no upload, a new topic's).
func leadEpoch(pl PartitionPlan) int32 {
	if len(pl.Segments) == 0 {
		return 0
	}
	return pl.MaxEpoch + 1
}

// active reports whether every partition has a leader.
func active(parts []controlplane.PartitionState) bool {
	for _, st := range parts {
		if st.Leader < 0 {
			return false
		}
	}
	return len(parts) > 0
}

// apply writes the restore: topic (leaderless), records, the producer id
// floor, leaders, then the topic's own configs (see controlplane/restore.go
// for why this order).
func (r *Restorer) apply(ctx context.Context, img *TopicImage, out adminapi.RestoredTopic, plans []PartitionPlan,
	refs map[int32][]controlplane.RemoteSegment) error {
	creating := maps.Clone(out.Configs)
	creating[uncleanConfig] = "false"
	t, err := r.tgt.Store.CreateRestoredTopic(ctx, controlplane.Topic{Name: img.Name, ID: img.ID, Partitions: out.Partitions,
		ReplicationFactor: out.ReplicationFactor, Configs: creating})
	if err != nil {
		return err
	}
	maxPID := int64(-1)
	for p, pl := range plans {
		for _, rec := range refs[int32(p)] {
			if _, err := r.tgt.Meta.RecreateRemoteSegment(ctx, rec); err != nil {
				return fmt.Errorf("partition %d: the source's segment %s: %w", p, rec.SegmentID, err)
			}
		}
		for _, m := range pl.Segments {
			if _, err := r.tgt.Meta.RecreateRemoteSegment(ctx, recordOf(img.ID, m)); err != nil {
				return fmt.Errorf("partition %d segment %s: %w", p, m.SegmentID, err)
			}
		}
		if n := len(pl.Segments); n > 0 {
			pid, err := r.maxProducerID(ctx, pl.Segments[n-1])
			if err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
			maxPID = max(maxPID, pid)
		}
	}
	if maxPID >= 0 && r.tgt.ProducerIDs != nil {
		if err := r.tgt.ProducerIDs.ReserveAbove(ctx, maxPID); err != nil {
			return err
		}
	}
	for p, pl := range plans {
		epoch := leadEpoch(pl)
		for _, rec := range refs[int32(p)] {
			epoch = max(epoch, rec.LeaderEpoch+1)
			for _, e := range rec.SegmentEpochs {
				epoch = max(epoch, e.Epoch+1)
			}
		}
		if _, err := r.tgt.Store.ActivateRestoredPartition(ctx, t.ID, int32(p), epoch); err != nil {
			return err
		}
	}
	if err := r.tgt.Store.SetTopicConfigs(ctx, img.Name, out.Configs); err != nil {
		return err
	}
	r.log.Info("restored a topic from the bucket", "topic", img.Name, "topic_id", img.ID.Hex(), "partitions", out.Partitions)
	return nil
}

// recordOf is the remote segment record of a restored segment: the
// manifest's fields, its objects in the upload's order, the manifest last.
func recordOf(id controlplane.TopicID, m tiering.Manifest) controlplane.RemoteSegment {
	rec := controlplane.RemoteSegment{TopicID: id, Partition: m.Partition, SegmentID: m.SegmentID, BaseOffset: m.BaseOffset,
		EndOffset: m.EndOffset, MaxTimestamp: m.MaxTimestamp, Size: m.Objects[tiering.KindLog].Size, LeaderEpoch: m.LeaderEpoch,
		SegmentEpochs: slices.Clone(m.SegmentEpochs)}
	for _, k := range []tiering.Kind{tiering.KindLog, tiering.KindIndex, tiering.KindTimeIndex, tiering.KindTxnIndex,
		tiering.KindEpochs, tiering.KindSnapshot} {
		if o, ok := m.Objects[k]; ok {
			rec.Objects = append(rec.Objects, o.Key)
		}
	}
	log := m.Objects[tiering.KindLog].Key
	rec.Objects = append(rec.Objects, strings.TrimSuffix(log, string(tiering.KindLog))+string(tiering.KindManifest))
	return rec
}

// maxProducerID reads the producer snapshot uploaded with m; -1 when it
// has none.
func (r *Restorer) maxProducerID(ctx context.Context, m tiering.Manifest) (int64, error) {
	o, ok := m.Objects[tiering.KindSnapshot]
	if !ok {
		return -1, nil
	}
	data, err := readLimited(ctx, r.bucket, o.Key, 64<<20)
	if err != nil {
		return -1, err
	}
	ps, err := partition.DecodeProducerState(data)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", o.Key, err)
	}
	return ps.MaxProducerID(), nil
}

// ErrNoBucket: the node has no cold tier to restore from.
var ErrNoBucket = errors.New("restore: the node has no bucket")
