package tiering

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore"
	"github.com/shale-io/shale/partition"
)

// ErrColdTierNotShared: brokers share the remote metadata but not the
// bucket (several brokers with the filesystem bucket under their own data
// directory, or with different buckets). Remote segments recorded by one
// would then be unreadable on the others, and followers would delete local
// data that exists only in the leader's bucket. Every broker of a cluster of
// more than one needs the same S3 bucket (--s3-bucket, --s3-endpoint).
var ErrColdTierNotShared = errors.New("tiering: the brokers sharing this remote metadata do not share one bucket")

// coldTierFix is what the error messages tell the operator to configure.
const coldTierFix = "set --s3-bucket (with --s3-endpoint, or s3_bucket/s3_endpoint in the config file) to the same bucket on every broker, " +
	"or run a single broker"

// ColdTierConflict decides, from every broker's cold-tier record, whether
// own may tier: nil when every broker that recorded one tiers to the same
// shared bucket, or when own is the only broker; otherwise an error wrapping
// ErrColdTierNotShared that says which brokers disagree and what to
// configure. A broker's own record in all is ignored (own stands for it).
func ColdTierConflict(own controlplane.ColdTier, all []controlplane.ColdTier) error {
	var others []controlplane.ColdTier
	for _, t := range all {
		if t.NodeID != own.NodeID {
			others = append(others, t)
		}
	}
	if len(others) == 0 {
		return nil
	}
	var bad []string
	for _, t := range others {
		switch {
		case !own.Shared:
			bad = append(bad, fmt.Sprintf("node %d (%s)", t.NodeID, describeTier(t)))
		case !t.Shared || t.Location != own.Location:
			bad = append(bad, fmt.Sprintf("node %d (%s)", t.NodeID, describeTier(t)))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: node %d tiers to %s, and also %s: tiering is refused (remote.storage.enable has no effect) until %s",
		ErrColdTierNotShared, own.NodeID, describeTier(own), strings.Join(bad, ", "), coldTierFix)
}

func describeTier(t controlplane.ColdTier) string {
	if t.Shared {
		return t.Location
	}
	return "its own filesystem bucket " + t.Location
}

// Register records this broker's cold tier in the remote metadata and
// refuses (an error wrapping ErrColdTierNotShared, after withdrawing the
// record) when the cluster's brokers do not share one bucket and the
// metadata already lists remote segments that this broker's bucket does not
// hold: such a broker could neither serve them nor rebuild a replica from
// them. Without such segments the broker starts and the conflict only stops
// tiering, on every broker, until it is resolved (each pass checks). A
// Manager whose Config has no Location skips all of this (tools, tests).
func (m *Manager) Register(ctx context.Context) error {
	if m.cfg.Location == "" {
		return nil
	}
	own := m.ownTier()
	if err := m.meta.PutColdTier(ctx, own); err != nil {
		return err
	}
	conflict := ColdTierConflict(own, m.meta.ColdTiers())
	if conflict == nil {
		return nil
	}
	missing, sample, err := m.unreadableSegments(ctx)
	if err != nil {
		return fmt.Errorf("tiering: check the recorded remote segments: %w", err)
	}
	if missing == 0 {
		m.log.Error("cold tier not shared: tiering is off", "err", conflict)
		m.tierMu.Lock()
		m.tierConflict = conflict.Error() // InEffect is false from the start
		m.tierMu.Unlock()
		m.stats.coldTierConflict.Store(true)
		return nil
	}
	if err := m.meta.DeleteColdTier(ctx, own.NodeID); err != nil {
		m.log.Warn("withdrawing the cold tier record failed", "err", err)
	}
	return fmt.Errorf("%w; the remote metadata lists segments this broker's bucket does not hold (%s): refusing to start", conflict, sample)
}

func (m *Manager) ownTier() controlplane.ColdTier {
	return controlplane.ColdTier{NodeID: m.cfg.NodeID, Shared: m.cfg.SharedBucket, Location: m.cfg.Location}
}

// unreadableSegments checks the first readable record of each partition
// with remote segments (at most 8 partitions) against this broker's bucket,
// and returns how many of their .log objects are missing, and one of them.
func (m *Manager) unreadableSegments(ctx context.Context) (missing int, sample string, err error) {
	checked := 0
	for _, id := range m.meta.RemoteTopicIDs() {
		for _, p := range m.meta.RemotePartitions(id) {
			for _, s := range m.meta.ListRemoteSegments(id, p) {
				if s.State != controlplane.CopyFinished {
					continue
				}
				key := ""
				for _, k := range s.Objects {
					if strings.HasSuffix(k, ".log") {
						key = k
					}
				}
				if key == "" {
					break
				}
				_, err := m.bucket.Stat(ctx, key)
				switch {
				case errors.Is(err, objstore.ErrNotFound):
					missing++
					sample = key
				case err != nil:
					return 0, "", err
				}
				checked++
				break
			}
			if checked >= 8 {
				return missing, sample, nil
			}
		}
	}
	return missing, sample, nil
}

// InEffect reports whether this broker tiers: false while its cold tier
// conflicts with another broker's (Register, and each pass, check), when
// topics with remote.storage.enable behave as if it were off. DeleteRecords
// and the followers' log start follow it: a log start committed to the
// remote metadata is only applied by brokers that tier.
//
// It is judged from the cold-tier records as the remote metadata's cache
// has them now, not from the last pass: a broker that registered alone
// tiers until the others' records arrive, and a pass may be seconds away.
func (m *Manager) InEffect() bool {
	if m.cfg.Location == "" {
		return true
	}
	return ColdTierConflict(m.ownTier(), m.meta.ColdTiers()) == nil
}

// coldTierOK reports whether this broker may tier on this pass; it records
// this broker's cold tier again when its record is missing. On a
// conflict it logs once (again when the conflict changes), counts it in
// Stats, and takes back what replicas were told is uploaded, so that local
// retention deletes nothing on the strength of a bucket that other brokers
// cannot read (only retention.ms/bytes apply, as without tiering).
func (m *Manager) coldTierOK(ctx context.Context, reps []*partition.Replica) bool {
	if m.cfg.Location == "" {
		return true
	}
	tiers := m.meta.ColdTiers()
	if !slices.ContainsFunc(tiers, func(t controlplane.ColdTier) bool { return t.NodeID == m.cfg.NodeID }) {
		// Removed meanwhile (the controller took this broker for gone while
		// its registration lapsed): record it again, so the check goes on
		// counting this broker.
		if err := m.meta.PutColdTier(ctx, m.ownTier()); err != nil {
			m.log.Warn("recording this broker's cold tier again failed", "err", err)
		} else {
			m.log.Info("recorded this broker's cold tier again")
		}
		tiers = m.meta.ColdTiers()
	}
	conflict := ColdTierConflict(m.ownTier(), tiers)
	msg := ""
	if conflict != nil {
		msg = conflict.Error()
	}
	m.tierMu.Lock()
	changed := msg != m.tierConflict
	m.tierConflict = msg
	m.tierMu.Unlock()
	m.stats.coldTierConflict.Store(conflict != nil)
	if changed {
		if conflict != nil {
			m.log.Error("cold tier not shared: tiering is off", "err", conflict)
		} else {
			m.log.Info("cold tier shared by every broker: tiering is on")
		}
	}
	if conflict == nil {
		return true
	}
	if !changed {
		// The replicas were told on the pass that found this conflict;
		// no pass has uploaded since (each stops here), so nothing has
		// told them otherwise. (Walking every replica each pass cost an
		// idle node with 10,000 partitions and a conflict 0.07% of a
		// core: issue 23.)
		return false
	}
	for _, rep := range reps {
		if !rep.Config().Bool(config.RemoteStorageEnable) {
			continue
		}
		if s, known := rep.RemoteState(); known && s.CopiedNext >= 0 {
			rep.SetRemoteState(partition.RemoteState{LogStart: s.LogStart, CopiedNext: -1})
		}
	}
	return false
}
