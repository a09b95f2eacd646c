// Package lag samples the consumer lag of the groups a node coordinates:
// per partition, how many records a group has not consumed (the high
// watermark less its committed offset) and how old the oldest of them is;
// for a share group, its records not yet acknowledged or archived
// (DescribeShareGroupOffsets) and how old the one at its start offset is.
// The node exports the latest sample's consumer groups as kafka_exporter's
// kafka_consumergroup_* series and keeps a short history per group.
//
// A sample goes through the Kafka protocol only, with the node's
// inter-broker client options: ListGroups to this node (the groups it
// coordinates), DescribeGroups, OffsetFetch and ListOffsets (kadm.Lag),
// and for each partition that lags one Fetch from its leader of the
// record at the committed offset, whose timestamp gives the time lag. So
// every group protocol the coordinator serves is sampled alike, and no
// coordinator state is shared with it.
package lag

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/adminapi"
)

// Config is a Sampler's configuration.
type Config struct {
	// NodeID is this node's broker id: the sampler asks it for its groups.
	NodeID int32
	// Seeds returns bootstrap addresses (this node's own is enough).
	Seeds func() []string
	// Opts are the client's connection options (the inter-broker
	// listener's TLS and SASL).
	Opts []kgo.Opt
	// Interval between samples; 0 samples only when Sample is called.
	Interval time.Duration
	// MaxTimeLagPartitions bounds the partitions whose oldest unconsumed
	// record is fetched per sample (default 1,000); the others report an
	// unknown time lag.
	MaxTimeLagPartitions int
	// History is how many samples of each group's total lag are kept
	// (default 120: an hour at the default interval of 30 s).
	History int
	Logger  *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// The sample's types are the admin API's (GET /v1/groups/lag).
type (
	PartitionLag = adminapi.ConsumerPartitionLag
	GroupLag     = adminapi.ConsumerGroupLag
	Sample       = adminapi.ConsumerLag
	Point        = adminapi.LagPoint
)

// Sampler takes samples on its own goroutine (Run) or when asked.
type Sampler struct {
	cfg Config

	mu struct {
		sync.Mutex
		cl      *kgo.Client
		closed  bool
		latest  Sample
		history map[string][]Point
	}
}

// New returns a Sampler; it dials lazily.
func New(cfg Config) *Sampler {
	if cfg.MaxTimeLagPartitions <= 0 {
		cfg.MaxTimeLagPartitions = 1000
	}
	if cfg.History <= 0 {
		cfg.History = 120
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Sampler{cfg: cfg}
	s.mu.history = map[string][]Point{}
	return s
}

// ErrClosed is returned by Sample after Close.
var ErrClosed = errors.New("lag: sampler closed")

func (s *Sampler) client() (*kgo.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	if s.mu.cl == nil {
		cl, err := kgo.NewClient(append(slices.Clip(s.cfg.Opts), kgo.SeedBrokers(s.cfg.Seeds()...), kgo.ClientID("shale-lag-sampler"))...)
		if err != nil {
			return nil, err
		}
		s.mu.cl = cl
	}
	return s.mu.cl, nil
}

// Close closes the sampler's connections; Run returns at its context.
func (s *Sampler) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.closed = true
	if s.mu.cl != nil {
		s.mu.cl.Close()
		s.mu.cl = nil
	}
}

// Run samples every Interval until ctx ends. A failed sample is logged
// and keeps the previous one.
func (s *Sampler) Run(ctx context.Context) {
	if s.cfg.Interval <= 0 {
		return
	}
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, max(s.cfg.Interval, 10*time.Second))
		if _, err := s.Sample(sctx); err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			if errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator) {
				// Coordinator partitions moving here or away: the next
				// sample sees them settled.
				s.cfg.Logger.Debug("consumer lag sample deferred", "err", err)
			} else {
				s.cfg.Logger.Warn("consumer lag sample failed", "err", err)
			}
		}
		cancel()
	}
}

// Latest returns the last sample taken (zero before the first).
func (s *Sampler) Latest() Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.latest
}

// History returns the kept totals of group, oldest first.
func (s *Sampler) History(group string) []Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mu.history[group])
}

// Sample takes a sample now, keeps it as the latest and returns it.
func (s *Sampler) Sample(ctx context.Context) (Sample, error) {
	cl, err := s.client()
	if err != nil {
		return Sample{}, err
	}
	groups, shares, types, err := s.ownGroups(ctx, cl)
	if err != nil {
		return Sample{}, err
	}
	smp := Sample{NodeID: s.cfg.NodeID, At: s.cfg.Now()}
	if len(shares) > 0 {
		smp.Groups = append(smp.Groups, s.shareGroups(ctx, cl, shares)...)
	}
	if len(groups) > 0 {
		lags, err := kadm.NewClient(cl).Lag(ctx, groups...)
		if err != nil {
			return Sample{}, err
		}
		for _, g := range lags.Sorted() {
			if g.Error() != nil {
				// A group that moved away or went between the list and
				// the describe is left out of this sample.
				continue
			}
			gl := GroupLag{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Type: types[g.Group], Members: len(g.Members),
				Partitions: []PartitionLag{}}
			for _, ml := range g.Lag.Sorted() {
				if ml.Err != nil {
					continue
				}
				gl.Partitions = append(gl.Partitions, PartitionLag{Topic: ml.Topic, Partition: ml.Partition,
					Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag, TimeLagSeconds: -1})
			}
			smp.Groups = append(smp.Groups, gl)
		}
	}
	slices.SortFunc(smp.Groups, func(a, b GroupLag) int { return strings.Compare(a.Group, b.Group) })
	if len(smp.Groups) > 0 {
		s.timeLags(ctx, cl, &smp)
	}
	s.keep(smp)
	return smp, nil
}

// shareGroups samples the share groups names (KIP-932), which this node
// coordinates: each partition's start offset (every record below it is
// acknowledged or archived) as its Committed, and its lag as
// DescribeShareGroupOffsets v1 answers it (records at or above the start
// offset, below the high watermark, neither acknowledged nor archived).
// A partition whose lag is unknown (-1) is left out; End is not asked.
func (s *Sampler) shareGroups(ctx context.Context, cl *kgo.Client, names []string) []GroupLag {
	adm := kadm.NewClient(cl)
	described, err := adm.DescribeShareGroups(ctx, names...)
	if err != nil && len(described) == 0 {
		s.cfg.Logger.Debug("share group lag sample", "err", err)
		return nil
	}
	offsets, err := adm.DescribeShareGroupOffsets(ctx, names...)
	if err != nil && len(offsets) == 0 {
		s.cfg.Logger.Debug("share group lag sample", "err", err)
		return nil
	}
	var out []GroupLag
	for _, name := range names {
		d, ok1 := described[name]
		o, ok2 := offsets[name]
		if !ok1 || !ok2 || d.Err != nil || o.Err != nil {
			continue // moved away or gone between the list and the describe
		}
		gl := GroupLag{Group: name, State: d.GroupState, ProtocolType: "share", Type: "share", Members: len(d.Members),
			Partitions: []PartitionLag{}}
		for t, ps := range o.Offsets {
			for p, so := range ps {
				if so.Err != nil || so.Lag < 0 || so.StartOffset < 0 {
					continue
				}
				gl.Partitions = append(gl.Partitions, PartitionLag{Topic: t, Partition: p, Committed: so.StartOffset, End: -1,
					Lag: so.Lag, TimeLagSeconds: -1})
			}
		}
		slices.SortFunc(gl.Partitions, func(a, b PartitionLag) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return int(a.Partition - b.Partition)
		})
		out = append(out, gl)
	}
	return out
}

func (s *Sampler) keep(smp Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.latest = smp
	seen := make(map[string]bool, len(smp.Groups))
	for _, g := range smp.Groups {
		seen[g.Group] = true
		h := append(s.mu.history[g.Group], Point{At: smp.At, Lag: g.Total()})
		if len(h) > s.cfg.History {
			h = slices.Delete(h, 0, len(h)-s.cfg.History)
		}
		s.mu.history[g.Group] = h
	}
	for g := range s.mu.history {
		if !seen[g] {
			delete(s.mu.history, g)
		}
	}
}

// ownGroups lists the groups this node coordinates: those of the consumer
// protocol with each one's type (ListGroups v5: classic or consumer), and
// the share groups.
func (s *Sampler) ownGroups(ctx context.Context, cl *kgo.Client) (groups, shares []string, types map[string]string, err error) {
	req := kmsg.NewPtrListGroupsRequest()
	resp, err := req.RequestWith(ctx, cl.Broker(int(s.cfg.NodeID)))
	if err != nil {
		return nil, nil, nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, nil, nil, err
	}
	types = make(map[string]string, len(resp.Groups))
	for _, g := range resp.Groups {
		switch {
		case strings.EqualFold(g.GroupType, "share"):
			shares = append(shares, g.Group)
		case g.ProtocolType == "" || g.ProtocolType == "consumer":
			groups = append(groups, g.Group)
			types[g.Group] = strings.ToLower(g.GroupType)
		}
	}
	slices.Sort(groups)
	slices.Sort(shares)
	return groups, shares, types, nil
}

type tp struct {
	topic     string
	partition int32
}

// timeLags fills TimeLagSeconds: 0 where nothing lags; for up to
// MaxTimeLagPartitions lagging partitions, the age of the record at the
// committed offset, fetched from the partition's leader.
func (s *Sampler) timeLags(ctx context.Context, cl *kgo.Client, smp *Sample) {
	want := map[tp]int64{} // partition -> the smallest offset some group has not consumed
	for _, g := range smp.Groups {
		for i := range g.Partitions {
			p := &g.Partitions[i]
			if p.Lag <= 0 {
				p.TimeLagSeconds = 0
				continue
			}
			if p.Committed < 0 {
				continue // no commit: the oldest unconsumed record is the log start's
			}
			k := tp{p.Topic, p.Partition}
			if o, ok := want[k]; !ok || p.Committed < o {
				if !ok && len(want) >= s.cfg.MaxTimeLagPartitions {
					continue
				}
				want[k] = p.Committed
			}
		}
	}
	if len(want) == 0 {
		return
	}
	stamps := s.fetchTimestamps(ctx, cl, smp, want)
	for _, g := range smp.Groups {
		for i := range g.Partitions {
			p := &g.Partitions[i]
			if p.Lag <= 0 || p.Committed < 0 {
				continue
			}
			if ts, ok := stamps[offsetKey{tp{p.Topic, p.Partition}, p.Committed}]; ok {
				p.TimeLagSeconds = max(smp.At.Sub(ts).Seconds(), 0)
			}
		}
	}
}

type offsetKey struct {
	tp
	offset int64
}

// fetchTimestamps reads, for every partition of want, the first record at
// or after each group's committed offset (every distinct committed offset
// of the sample), and returns their timestamps.
func (s *Sampler) fetchTimestamps(ctx context.Context, cl *kgo.Client, smp *Sample, want map[tp]int64) map[offsetKey]time.Time {
	topics := make([]string, 0, len(want))
	for k := range want {
		if !slices.Contains(topics, k.topic) {
			topics = append(topics, k.topic)
		}
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, topics...)
	if err != nil {
		s.cfg.Logger.Debug("consumer lag: metadata for the time lag", "err", err)
		return nil
	}
	// Every (partition, committed offset) pair of the sample, by leader.
	byLeader := map[int32][]offsetKey{}
	seen := map[offsetKey]bool{}
	for _, g := range smp.Groups {
		for _, p := range g.Partitions {
			k := offsetKey{tp{p.Topic, p.Partition}, p.Committed}
			if _, ok := want[k.tp]; !ok || p.Lag <= 0 || p.Committed < 0 || seen[k] {
				continue
			}
			seen[k] = true
			pd, ok := md.Topics[p.Topic].Partitions[p.Partition]
			if !ok || pd.Leader < 0 {
				continue
			}
			byLeader[pd.Leader] = append(byLeader[pd.Leader], k)
		}
	}
	out := map[offsetKey]time.Time{}
	for leader, keys := range byLeader {
		// One fetch per distinct offset of a partition: a Fetch names a
		// partition once, so requests are made in rounds.
		for len(keys) > 0 {
			var round, rest []offsetKey
			inRound := map[tp]bool{}
			for _, k := range keys {
				if inRound[k.tp] {
					rest = append(rest, k)
					continue
				}
				inRound[k.tp] = true
				round = append(round, k)
			}
			// A Fetch returns a batch larger than a partition's limit
			// only for its first partition with data: a partition left
			// without a record is asked again alone.
			for _, k := range s.fetchRound(ctx, cl, leader, round, md.Topics, out) {
				s.fetchRound(ctx, cl, leader, []offsetKey{k}, md.Topics, out)
			}
			keys = rest
		}
	}
	return out
}

// fetchRound fetches keys (one offset per partition) from leader into
// out and returns the keys whose partition answered without an error and
// without a record (their first batch was over the partition's limit).
func (s *Sampler) fetchRound(ctx context.Context, cl *kgo.Client, leader int32, keys []offsetKey, topics kadm.TopicDetails, out map[offsetKey]time.Time) []offsetKey {
	slices.SortFunc(keys, func(a, b offsetKey) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	for _, k := range keys {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != k.topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = k.topic
			t.TopicID = topics[k.topic].ID // Fetch v13+ names topics by id
			req.Topics = append(req.Topics, t)
		}
		t := &req.Topics[len(req.Topics)-1]
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = k.partition
		p.FetchOffset = k.offset
		p.PartitionMaxBytes = 64 << 10 // only the first record is wanted
		p.LogStartOffset = -1
		t.Partitions = append(t.Partitions, p)
	}
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		s.cfg.Logger.Debug("consumer lag: fetch for the time lag", "leader", leader, "err", err)
		return nil
	}
	var empty []offsetKey
	dec := kgo.DefaultDecompressor()
	names := make(map[kadm.TopicID]string, len(topics))
	for name, td := range topics {
		names[td.ID] = name
	}
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		if rt.Topic == "" {
			rt.Topic = names[rt.TopicID]
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if rp.ErrorCode != 0 {
				continue
			}
			var off int64 = -1
			for _, k := range keys {
				if k.topic == rt.Topic && k.partition == rp.Partition {
					off = k.offset
				}
			}
			if off < 0 {
				continue
			}
			fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: off, Topic: rt.Topic, Partition: rp.Partition}, rp, dec, nil)
			k := offsetKey{tp{rt.Topic, rp.Partition}, off}
			if len(fp.Records) > 0 {
				out[k] = fp.Records[0].Timestamp
			} else if len(keys) > 1 {
				empty = append(empty, k)
			}
		}
	}
	return empty
}
