package group

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/authz"
	"github.com/shale-io/shale/coordinator"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/partition"
	"github.com/shale-io/shale/segment/batch"
)

// Config configures a Coordinator. Zero fields take the defaults.
type Config struct {
	// Partitions is offsets.topic.num.partitions (default 50). Every node
	// of a cluster must agree on it.
	Partitions int32
	// ReplicationFactor is offsets.topic.replication.factor, the offsets
	// topic's replication factor when this node creates it (default 3),
	// capped at the live brokers at that moment so that a smaller cluster
	// (one node) still gets its groups.
	ReplicationFactor int16
	// MinSessionTimeout and MaxSessionTimeout are
	// group.min.session.timeout.ms and group.max.session.timeout.ms
	// (defaults 6 s and 30 min); a JoinGroup outside them gets
	// INVALID_SESSION_TIMEOUT.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// CommitTimeout bounds the wait for the high watermark after an
	// append (offsets.commit.timeout.ms, default 5 s).
	CommitTimeout time.Duration
	// MaxMetadataBytes is offset.metadata.max.bytes (default 4096).
	MaxMetadataBytes int
	// CompactAfterRecords starts a compaction of an offsets partition
	// after this many records were appended to it (default 20000; see
	// compact.go).
	CompactAfterRecords int64
	// OffsetsRetention is offsets.retention.minutes: how long committed
	// offsets outlive their group's last member or their commit (default
	// 7 days; offset_expiry.go).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is
	// offsets.retention.check.interval.ms: how often the coordinator
	// expires offsets and deletes empty groups (default 10 min).
	OffsetsRetentionCheckInterval time.Duration
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms, the
	// session of a KIP-848 consumer group member (default 45 s).
	ConsumerSessionTimeout time.Duration
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms,
	// the interval a KIP-848 member is told to heartbeat at (default 5 s).
	ConsumerHeartbeatInterval time.Duration
	// GroupConfig returns a group's effective settings: its group configs
	// (KIP-848) over the node's defaults, resolved by the caller
	// (coordinator.GroupConfigRules.Resolve); it is called at each
	// ConsumerGroupHeartbeat and load, so it must not do I/O. Nil gives
	// every group ConsumerSessionTimeout and ConsumerHeartbeatInterval.
	GroupConfig func(group string) coordinator.GroupConfig
	// DeleteGroupConfigs deletes the configs of a group DeleteGroups
	// deleted, as Kafka does; nil: none are kept.
	DeleteGroupConfigs func(ctx context.Context, group string) error
	// ConsumerMaxSize is group.consumer.max.size: members of one KIP-848
	// consumer group at most (default, as Kafka's, math.MaxInt32).
	ConsumerMaxSize int
	// ConsumerMigrationPolicy is group.consumer.migration.policy: which
	// online conversions between classic and consumer groups are allowed
	// (bidirectional, upgrade, downgrade, disabled; "" is bidirectional,
	// Kafka 4's default; see consumer_classic.go).
	ConsumerMigrationPolicy string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// NodeID is this node's id: ListGroups counts an offsets partition
	// the control plane names this node the leader of as loading until
	// its replica leads it.
	NodeID int32
	// Authorizer checks the group APIs' ACLs (Read on the group to join
	// and commit, Describe to describe and fetch offsets, Delete to
	// delete; the topics' too); nil allows everything.
	Authorizer *authz.Authorizer
}

func (c *Config) setDefaults() {
	if c.Partitions <= 0 {
		c.Partitions = 50
	}
	if c.ReplicationFactor <= 0 {
		c.ReplicationFactor = 3
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 6 * time.Second
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = 5 * time.Second
	}
	if c.MaxMetadataBytes <= 0 {
		c.MaxMetadataBytes = 4096
	}
	if c.CompactAfterRecords <= 0 {
		c.CompactAfterRecords = 20000
	}
	if c.ConsumerMaxSize <= 0 {
		c.ConsumerMaxSize = math.MaxInt32
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = 7 * 24 * time.Hour
	}
	if c.OffsetsRetentionCheckInterval <= 0 {
		c.OffsetsRetentionCheckInterval = 10 * time.Minute
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = 45 * time.Second
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Coordinator is this node's group coordinator. It is safe for concurrent
// use; Close stops it.
type Coordinator struct {
	cfg     Config
	leaders partition.Leaders
	cluster coordinator.Cluster
	log     *slog.Logger
	// counters are the totals of Figures (metrics.go).
	counters counters

	// rt runs the shards: one per __consumer_offsets partition this node
	// leads, loaded on leadership; it also tracks the group runners and
	// compactions.
	rt *coordinator.Runtime[*shard]

	mu struct {
		sync.Mutex
		txns TxnCoordinators // nil: no transactions
		// txnAdder adds a group's offsets partition to a producer's
		// transaction for TxnOffsetCommit v5; nil: v5 is refused.
		txnAdder TxnPartitionAdder
		shares   ShareGroups // nil: no share groups
		// shareCoords finds share coordinators (FindCoordinator v6 key
		// type 2); nil: not served.
		shareCoords ShareCoordinators
	}
}

// New returns a coordinator serving the groups whose offsets partitions
// leaders says this node leads.
func New(cfg Config, leaders partition.Leaders, cluster coordinator.Cluster) *Coordinator {
	cfg.setDefaults()
	c := &Coordinator{cfg: cfg, leaders: leaders, cluster: cluster, log: cfg.Logger.With("component", "group")}
	c.rt = coordinator.New(coordinator.Config[*shard]{
		Topic: OffsetsTopic, Partitions: cfg.Partitions, NodeID: cfg.NodeID, Leaders: leaders, Cluster: cluster, Logger: c.log,
		NewShard: func(p *coordinator.Partition) *shard {
			sh := &shard{c: c, partition: p.Index, replica: p.Replica, epoch: p.Epoch}
			sh.mu.groups = map[string]*runner{}
			return sh
		},
	})
	c.rt.Go(c.expireLoop)
	return c
}

// GroupVersionFeature is the name of Kafka's feature flag for the group
// coordinator's protocols: level 1 is the consumer group protocol of
// KIP-848 (ConsumerGroupHeartbeat), which Kafka 4.0 finalizes by default.
const GroupVersionFeature = "group.version"

// Register serves the group APIs on reg and advertises group.version 1
// (KIP-848 is built, and served to every client that asks).
func (c *Coordinator) Register(reg *kafka.Registry) {
	reg.SetFeature(kafka.Feature{Name: GroupVersionFeature, MinLevel: 0, MaxLevel: 1, Finalized: 1})
	reg.Register(kmsg.FindCoordinator, 0, 6, c.handleFindCoordinator)
	reg.Register(kmsg.JoinGroup, 0, 9, c.handleJoinGroup)
	reg.Register(kmsg.SyncGroup, 0, 5, c.handleSyncGroup)
	reg.Register(kmsg.Heartbeat, 0, 4, c.handleHeartbeat)
	reg.Register(kmsg.LeaveGroup, 0, 5, c.handleLeaveGroup)
	reg.Register(kmsg.OffsetCommit, 0, 10, c.handleOffsetCommit)
	reg.Register(kmsg.TxnOffsetCommit, 0, 6, c.handleTxnOffsetCommit)
	reg.Register(kmsg.OffsetFetch, 0, 10, c.handleOffsetFetch)
	reg.Register(kmsg.OffsetDelete, 0, 0, c.handleOffsetDelete)
	reg.Register(kmsg.ListGroups, 0, 5, c.handleListGroups)
	reg.Register(kmsg.DescribeGroups, 0, 6, c.handleDescribeGroups)
	reg.Register(kmsg.DeleteGroups, 0, 3, c.handleDeleteGroups)
	reg.Register(kmsg.ConsumerGroupHeartbeat, 0, 1, c.handleConsumerGroupHeartbeat)
	reg.Register(kmsg.ConsumerGroupDescribe, 0, 1, c.handleConsumerGroupDescribe)
}

// Close stops every group (held requests are answered NOT_COORDINATOR) and
// waits for the coordinator's goroutines. It is idempotent. The replicas
// are the caller's: close them after.
func (c *Coordinator) Close() { c.rt.Close() }

// LeadershipChanged tells the coordinator that this node's role for
// __consumer_offsets partition p may have changed (the replica manager
// calls it after applying a role). When this node leads p in a leader
// epoch it has not loaded, the partition starts loading at once, as
// Kafka's onElection does; when it does not lead p, its groups unload. It
// never waits for I/O and is safe to call from any goroutine; a partition
// outside offsets.topic.num.partitions is ignored.
func (c *Coordinator) LeadershipChanged(p int32) { c.rt.LeadershipChanged(p) }

// LoadLed starts loading every offsets partition this node leads and has
// not loaded (LeadershipChanged for each). The node calls it once its
// leadership notifications reach the coordinator, for the roles applied
// before that.
func (c *Coordinator) LoadLed() { c.rt.LoadLed() }

// memberGroup is the group a member's request (Heartbeat, SyncGroup) names,
// or the request's error code: INVALID_GROUP_ID for an empty name, the
// lookup's error, or UNKNOWN_MEMBER_ID for a group this coordinator does
// not hold.
func (c *Coordinator) memberGroup(id string) (*runner, int16) {
	rn, err := c.lookup(id, false)
	switch {
	case id == "":
		return nil, kerr.InvalidGroupID.Code
	case err != nil:
		return nil, errorCode(err)
	case rn == nil:
		return nil, kerr.UnknownMemberID.Code
	}
	return rn, 0
}

// lookup returns the runner of group id. With create, an unknown group is
// created (Empty). A nil runner and nil error: no such group. While the
// group's partition loads, the error is ErrLoadInProgress.
func (c *Coordinator) lookup(id string, create bool) (*runner, error) {
	sh, err := c.rt.Shard(PartitionFor(id, c.cfg.Partitions))
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.mu.unloaded {
		return nil, fmt.Errorf("%w: %s-%d unloaded", ErrNotCoordinator, OffsetsTopic, sh.partition)
	}
	r := sh.mu.groups[id]
	if r == nil && create {
		r = c.startRunnerLocked(sh, newGroup(id, &c.cfg, nil))
	}
	return r, nil
}

// listable returns the runners of every group of the offsets partitions
// this node leads (ListGroups), or ErrLoadInProgress while one of them is
// not loaded (coordinator.Runtime.Listable): a partial list would tell a
// client that those groups do not exist. It starts no load: loads start
// on leadership (LeadershipChanged), and one that failed is retried by the
// next request for one of the partition's groups.
func (c *Coordinator) listable() ([]*runner, error) {
	shards, err := c.rt.Listable()
	if err != nil {
		return nil, err
	}
	var out []*runner
	for _, sh := range shards {
		sh.mu.Lock()
		for _, r := range sh.mu.groups {
			out = append(out, r)
		}
		sh.mu.Unlock()
	}
	return out, nil
}

// Unload stops sh's groups (coordinator.Shard): the runtime calls it when
// the shard is replaced, loses its leadership or the coordinator closes.
func (sh *shard) Unload() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, r := range sh.mu.groups {
		r.stopOnce()
	}
	sh.mu.groups = map[string]*runner{}
	sh.mu.unloaded = true
	if sg := sh.c.shareGroups(); sg != nil {
		sg.UnloadShareGroups(sh.partition)
	}
}

// forget drops a dead group's runner. It is called by the runner itself.
func (c *Coordinator) forget(sh *shard, r *runner) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.mu.groups[r.g.id] == r {
		delete(sh.mu.groups, r.g.id)
	}
}

// append writes records to sh's partition as one batch and returns the
// last offset; the caller waits for the high watermark to pass it.
func (c *Coordinator) append(sh *shard, records []record) (int64, error) {
	now := c.cfg.Now().UnixMilli()
	recs := make([]batch.Record, len(records))
	for i, r := range records {
		recs[i] = batch.Record{Key: r.key, Value: r.value}
	}
	opts := batch.NoProducer()
	opts.FirstTimestamp = now
	b, err := batch.Build(nil, opts, recs)
	if err != nil {
		return -1, err
	}
	res, err := sh.replica.AppendLeader(b)
	if err != nil {
		return -1, fmt.Errorf("%w: appending to %s-%d: %w", ErrNotCoordinator, OffsetsTopic, sh.partition, err)
	}
	c.noteAppended(sh, len(records))
	return res.LastOffset, nil
}

// call runs fn on r's goroutine and waits for its one reply, then for the
// high watermark the reply asks for. The response is NOT_COORDINATOR-like
// (from onGone) when the group stops before answering, or when what it
// appended is not replicated within CommitTimeout.
func (c *Coordinator) call(ctx context.Context, r *runner, fn func(g *group, send replyFn), onGone func() kmsg.Response) (kmsg.Response, error) {
	return c.callThen(ctx, r, fn, nil, onGone)
}

// callThen is call, and once the high watermark passed what fn appended,
// runs then on r's goroutine before answering: a commit is applied to the
// group's state only once it is replicated. When the group stopped
// meanwhile (its shard unloaded), then does not run and the response is
// sent as it is: what it answers is replicated, and the next coordinator
// loads it.
func (c *Coordinator) callThen(ctx context.Context, r *runner, fn func(g *group, send replyFn), then func(g *group), onGone func() kmsg.Response) (kmsg.Response, error) {
	type answer struct {
		resp kmsg.Response
		hw   int64
	}
	ch := make(chan answer, 1)
	send := func(resp kmsg.Response, hw int64) { ch <- answer{resp, hw} }
	if !r.submit(ctx, func(g *group) { fn(g, send) }) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return onGone(), nil
	}
	var a answer
	select {
	case a = <-ch:
	case <-r.done:
		select {
		case a = <-ch:
		default:
			return onGone(), nil
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if a.hw < 0 {
		return a.resp, nil
	}
	wctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	if err := r.shard.replica.WaitCommitted(wctx, a.hw, r.shard.epoch); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c.log.Warn("offsets append not replicated in time", "group", r.g.id, "err", err)
		return onGone(), nil
	}
	if then != nil {
		applied := make(chan struct{})
		if r.submit(ctx, func(g *group) { then(g); close(applied) }) {
			select {
			case <-applied:
			case <-r.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return a.resp, nil
}
