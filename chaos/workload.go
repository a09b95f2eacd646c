package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicSpec is one topic of the workload.
type topicSpec struct {
	name      string
	parts     int32
	configs   map[string]string
	compacted bool
	keys      int // compacted: keys k0..k<keys-1>
	// leaderAcks: written with acks=1 by a producer of its own, without
	// idempotence. What the leader acknowledged may be lost in a failover,
	// and retries may write a record twice, so LOST, DUPLICATE and REORDER
	// are not judged on it; what a consumer saw must still be in the final
	// read (only records below the high watermark may be served), and the
	// replicas must agree below it.
	leaderAcks bool
	// trimmed: the workload deletes its old records with DeleteRecords
	// every few seconds (trimRecords).
	trimmed bool
}

// workloadTopics: a plain topic, a tiered one with small segments and small
// local retention (cold reads during faults), a compacted one, and one
// written with acks=1 (the last). The tiered and the acks=1 topics are
// trimmed by DeleteRecords as the run goes (the tiered and the local path).
func workloadTopics() []topicSpec {
	return []topicSpec{
		{name: "chaos", parts: 3, configs: map[string]string{"min.insync.replicas": "2", "remote.storage.enable": "false"}},
		{name: "tiered", parts: 2, trimmed: true, configs: map[string]string{"min.insync.replicas": "2", "remote.storage.enable": "true",
			"segment.bytes": "16384", "local.retention.bytes": "32768"}},
		{name: "compacted", parts: 1, compacted: true, keys: 20, configs: map[string]string{"min.insync.replicas": "2",
			"remote.storage.enable": "false", "cleanup.policy": "compact", "segment.bytes": "16384",
			"min.cleanable.dirty.ratio": "0.01"}},
		{name: "acks1", parts: 2, leaderAcks: true, trimmed: true, configs: map[string]string{"min.insync.replicas": "2", "remote.storage.enable": "false"}},
	}
}

// workload is the run's clients and the goroutines that drive them.
type workload struct {
	producers []*producer
	consumers []*consumer
	groups    []*groupConsumer // the classic group's member, the KIP-848 group's two
	tx        *etl             // nil without Config.Transactions
	adv       *adversary       // nil without Config.Transactions
	shares    *shareWorkload   // nil without Config.ShareGroups

	// Set by start.
	wg      sync.WaitGroup // every goroutine but the share members
	swg     sync.WaitGroup // the share members
	trimmed chan struct{}  // closed when trimRecords has returned

	stopWork, stopShares, stopProducers, stopConsumers, stopETL context.CancelFunc
}

// newWorkload makes the workload's clients; none runs yet. The
// idempotent producers write the topics with acks=all, one more producer
// (acks=1) the leaderAcks topics; a consumer reads each topic; the group
// members, the ETL pipeline with its adversary (Config.Transactions) and
// the share group (Config.ShareGroups) use the first topic.
func newWorkload(cfg *Config, seeds []string, topics []topicSpec, rec *recorder) (*workload, error) {
	w := &workload{}
	var strong, weak []topicSpec
	for _, t := range topics {
		if t.leaderAcks {
			weak = append(weak, t)
		} else {
			strong = append(strong, t)
		}
	}
	for i := range cfg.Producers {
		p, err := newProducer(fmt.Sprintf("p%d", i), seeds, strong, cfg.Rate, false, rec)
		if err != nil {
			return nil, err
		}
		w.producers = append(w.producers, p)
	}
	if len(weak) > 0 {
		p, err := newProducer("pa1", seeds, weak, cfg.Rate, true, rec)
		if err != nil {
			return nil, err
		}
		w.producers = append(w.producers, p)
	}
	for _, t := range topics {
		cn, err := newConsumer("c-"+t.name, seeds, t, rec)
		if err != nil {
			return nil, err
		}
		w.consumers = append(w.consumers, cn)
	}
	// The classic group's member, and the KIP-848 group's two members.
	for _, m := range []struct {
		name, group string
		kip848      bool
		life        time.Duration
	}{{"g0", groupName, false, memberLife}, {"k0", group848Name, true, 11 * time.Second}, {"k1", group848Name, true, 17 * time.Second}} {
		gc, err := newGroupConsumer(m.name, m.group, seeds, topics[0], rec, m.kip848, m.life)
		if err != nil {
			return nil, err
		}
		w.groups = append(w.groups, gc)
	}
	if cfg.Transactions {
		var err error
		if w.tx, err = newETL("etl", seeds, topics[0], rec, etlDeliveryTimeout); err != nil {
			return nil, err
		}
		if w.adv, err = newAdversary(seeds, topics[0], rec, cfg.Seed); err != nil {
			return nil, err
		}
	}
	if cfg.ShareGroups {
		w.shares = newShareWorkload(seeds, topics[0], rec)
	}
	return w, nil
}

// start starts the workload's goroutines, in this order and each on a
// context that one of w's stop functions cancels: the share members
// (stopShares), the producers (stopProducers), the consumers
// (stopConsumers), the ETL pipeline (stopETL) and its adversary
// (stopProducers), the trimmer (stopProducers), the group members and the
// two groups' commit watchers (stopConsumers). stopWork cancels them all.
func (w *workload) start(seeds []string, topics []topicSpec, rec *recorder) {
	wctx, stopWork := context.WithCancel(context.Background())
	w.stopWork = stopWork
	sctx, stopShares := context.WithCancel(wctx)
	w.stopShares = stopShares
	if w.shares != nil {
		// Two member slots on the plain topic; each member lives 13 s or
		// 19 s, then a new one joins.
		for i, life := range []time.Duration{13 * time.Second, 19 * time.Second} {
			w.swg.Add(1)
			go func() { defer w.swg.Done(); w.shares.member(sctx, fmt.Sprintf("s%d", i), life) }()
		}
	}
	pctx, stopProducers := context.WithCancel(wctx)
	w.stopProducers = stopProducers
	cctx, stopConsumers := context.WithCancel(wctx)
	w.stopConsumers = stopConsumers
	for _, p := range w.producers {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); p.run(pctx) }()
	}
	for _, cn := range w.consumers {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); cn.run(cctx) }()
	}
	ectx, stopETL := context.WithCancel(wctx)
	w.stopETL = stopETL
	if w.tx != nil {
		w.wg.Add(2)
		go func() { defer w.wg.Done(); w.tx.run(ectx) }()
		go func() { defer w.wg.Done(); w.adv.run(pctx) }()
	}
	w.wg.Add(3)
	w.trimmed = make(chan struct{})
	go func() {
		defer w.wg.Done()
		defer close(w.trimmed)
		trimRecords(pctx, seeds, topics, rec, 10*time.Second)
	}()
	for _, gc := range w.groups {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); gc.run(cctx) }()
	}
	go func() {
		defer w.wg.Done()
		watchCommits(cctx, seeds, groupName, topics[0].name, rec, 200*time.Millisecond)
	}()
	go func() {
		defer w.wg.Done()
		watchCommits(cctx, seeds, group848Name, topics[0].name, rec, 200*time.Millisecond)
	}()
}

// suspendGroups takes the group members out (the faulter's suspendGroup,
// for a coordinator fault) and returns the function that brings them back.
func (w *workload) suspendGroups() (resume func()) {
	var resumes []func()
	for _, gc := range w.groups {
		resumes = append(resumes, gc.suspend())
	}
	return func() {
		for _, r := range resumes {
			r()
		}
	}
}

// close cancels every context of the workload, then waits for its
// goroutines (all but the share members, which stopShares ends). After a
// whole run the phases have stopped them all already; a run that ends
// early (a failed warm-up) is stopped here.
func (w *workload) close() {
	w.stopETL()
	w.stopConsumers()
	w.stopProducers()
	w.stopShares()
	w.stopWork()
	w.wg.Wait()
}

const valueFill = 100

// producer is one franz-go producer writing unique values (name:seq:filler)
// round-robin over its topics' partitions: idempotent with acks=all, or,
// for leaderAcks topics, acks=1 without idempotence and one request in
// flight per broker.
type producer struct {
	name   string
	topics []topicSpec
	rate   int
	cl     *kgo.Client
	rec    *recorder
	seq    atomic.Int64
	failed atomic.Int64
	done   chan struct{}
}

func newProducer(name string, seeds []string, topics []topicSpec, rate int, leaderAcks bool, rec *recorder) (*producer, error) {
	acks := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}
	if leaderAcks {
		acks = []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(1)}
	}
	cl, err := kgo.NewClient(append(acks, kgo.SeedBrokers(seeds...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(20*time.Second),
		kgo.ProduceRequestTimeout(5*time.Second),
		kgo.RequestTimeoutOverhead(3*time.Second),
		kgo.MaxBufferedRecords(512),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(200*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	rec.actor(name, "producer")
	return &producer{name: name, topics: topics, rate: rate, cl: cl, rec: rec, done: make(chan struct{})}, nil
}

// run produces until ctx ends, then flushes (bounded by the delivery
// timeout) and closes the client.
func (p *producer) run(ctx context.Context) {
	defer close(p.done)
	defer p.cl.Close()
	tick := time.NewTicker(time.Second / time.Duration(max(1, p.rate)))
	defer tick.Stop()
	for n := int64(0); ; n++ {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			p.cl.Flush(fctx)
			cancel()
			return
		case <-tick.C:
		}
		t := p.topics[n%int64(len(p.topics))]
		seq := p.seq.Add(1) - 1
		r := &kgo.Record{Topic: t.name, Partition: int32((n / int64(len(p.topics))) % int64(t.parts)), Value: []byte(Value(p.name, seq, valueFill))}
		var key string
		if t.compacted {
			key = fmt.Sprintf("k%d", seq%int64(t.keys))
			r.Key = []byte(key)
		}
		sent := time.Now()
		p.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			now := p.rec.since()
			if err != nil {
				p.failed.Add(1)
				p.rec.produceError(now)
				return
			}
			p.rec.ack(Ack{TP: TP{r.Topic, r.Partition}, Producer: p.name, Seq: seq, Key: key, Value: string(r.Value),
				Offset: r.Offset, At: now, Latency: time.Since(sent)})
		})
	}
}

// consumer reads every partition of a topic from offset 0, assigned
// directly, and records what it saw.
type consumer struct {
	name  string
	topic topicSpec
	cl    *kgo.Client
	rec   *recorder
	done  chan struct{}

	mu   sync.Mutex
	next map[int32]int64 // next offset to read, per partition
}

func newConsumer(name string, seeds []string, t topicSpec, rec *recorder) (*consumer, error) {
	offs := map[int32]kgo.Offset{}
	for p := range t.parts {
		offs[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{t.name: offs}),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.MetadataMinAge(500*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 200 * time.Millisecond }))
	if err != nil {
		return nil, err
	}
	rec.actor(name, "consumer")
	return &consumer{name: name, topic: t, cl: cl, rec: rec, done: make(chan struct{}), next: map[int32]int64{}}, nil
}

func (c *consumer) run(ctx context.Context) {
	defer close(c.done)
	defer c.cl.Close()
	for ctx.Err() == nil {
		fs := c.cl.PollFetches(ctx)
		var rs []Read
		now := c.rec.since()
		fs.EachRecord(func(r *kgo.Record) {
			rs = append(rs, Read{TP: TP{r.Topic, r.Partition}, Rec: Rec{Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)}, Consumer: c.name, At: now})
		})
		c.mu.Lock()
		for _, r := range rs {
			c.next[r.Partition] = max(c.next[r.Partition], r.Offset+1)
		}
		c.mu.Unlock()
		c.rec.reads(c.name, rs)
	}
}

// caughtUp reports whether the consumer has read up to ends.
func (c *consumer) caughtUp(ends map[int32]int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, e := range ends {
		if e > 0 && c.next[p] < e && !c.topic.compacted {
			return false
		}
	}
	return true
}

// groupConsumer is a consumer group member that commits what it read after
// every poll, recording each commit the coordinator acknowledged.
type groupConsumer struct {
	name  string
	group string
	topic topicSpec
	seeds []string
	cl    *kgo.Client // replaced every memberLife

	// kip848: the member speaks KIP-848's consumer group protocol (the
	// coordinator assigns; franz-go's ServerSideBalancer), blocks
	// rebalances while it processes a poll and commits what it read before
	// it gives a partition up.
	kip848 bool

	suspended atomic.Pointer[chan struct{}] // set: leave the group, rejoin once it is closed
	joined    time.Duration                 // when the current member was made
	life      time.Duration                 // how long the current member lives

	mu sync.Mutex
	// resumed: partitions the current member has read from since it was
	// given them; assigned: when it was given each (kip848).
	resumed  map[TP]bool
	assigned map[TP]time.Duration
	rec      *recorder
	done     chan struct{}
}

func newGroupConsumer(name, group string, seeds []string, t topicSpec, rec *recorder, kip848 bool, life time.Duration) (*groupConsumer, error) {
	g := &groupConsumer{name: name, group: group, topic: t, seeds: seeds, rec: rec, kip848: kip848, life: life, done: make(chan struct{})}
	if err := g.connect(); err != nil {
		return nil, err
	}
	kind := "group"
	if kip848 {
		kind = "group-kip848"
	}
	rec.actor(name, kind)
	return g, nil
}

// connect makes the member's client: a new member of the group, which
// resumes from the group's committed offsets (the start when there are
// none).
func (g *groupConsumer) connect() error {
	opts := []kgo.Opt{kgo.SeedBrokers(g.seeds...),
		kgo.ConsumerGroup(g.group), kgo.ConsumeTopics(g.topic.name), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10 * time.Second), kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 200 * time.Millisecond })}
	if g.kip848 {
		// A partition moves to another member only after this one has
		// revoked it, and this one commits what it read before it revokes
		// (the poll loop commits before AllowRebalance; the callback
		// commits whatever is left): the next owner, given the partition
		// later, must resume from at least that commit.
		opts = append(opts, kgo.ServerSideBalancer(), kgo.BlockRebalanceOnPoll(),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				at := g.rec.since()
				g.mu.Lock()
				defer g.mu.Unlock()
				for t, ps := range m {
					for _, p := range ps {
						g.assigned[TP{t, p}] = at
						delete(g.resumed, TP{t, p})
					}
				}
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
				g.commit(ctx, cl)
				g.forget(m)
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { g.forget(m) }))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.cl = cl
	g.joined = g.rec.since()
	g.resumed = map[TP]bool{}
	g.assigned = map[TP]time.Duration{}
	g.mu.Unlock()
	return nil
}

// forget drops what the member knew of partitions it no longer owns.
func (g *groupConsumer) forget(m map[string][]int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for t, ps := range m {
		for _, p := range ps {
			delete(g.assigned, TP{t, p})
			delete(g.resumed, TP{t, p})
		}
	}
}

// suspend makes the member leave the group at once and join again, as a
// new member resuming from the committed offsets, when resume is called:
// a consumer restarted while its coordinator fails over, so that commits
// the coordinator lost show as offsets going back instead of being
// overwritten by the member's next commit.
func (g *groupConsumer) suspend() (resume func()) {
	ch := make(chan struct{})
	g.suspended.Store(&ch)
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// memberLife is how long one client of the group consumer lives: it then
// leaves and a new one joins, resuming from the committed offsets, so that
// commits a coordinator lost show as offsets going back. The KIP-848
// group's two members live 11 s and 17 s, so that partitions move between
// them as one leaves and the other takes them.
const memberLife = 15 * time.Second

func (g *groupConsumer) run(ctx context.Context) {
	defer close(g.done)
	defer func() { g.cl.Close() }()
	born := time.Now()
	for ctx.Err() == nil {
		if ch := g.suspended.Load(); ch != nil {
			g.cl.Close()
			select {
			case <-*ch:
			case <-ctx.Done():
				g.connect()
				return
			}
			g.suspended.Store(nil)
			if err := g.connect(); err != nil {
				return
			}
			born = time.Now()
		}
		if time.Since(born) > g.life {
			g.cl.Close() // leaves the group
			if err := g.connect(); err != nil {
				return
			}
			born = time.Now()
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := g.cl.PollFetches(pctx)
		cancel()
		var rs []Read
		now := g.rec.since()
		fs.EachRecord(func(r *kgo.Record) {
			rs = append(rs, Read{TP: TP{r.Topic, r.Partition}, Rec: Rec{Offset: r.Offset, Value: string(r.Value)}, Consumer: g.name, At: now})
		})
		g.rec.reads(g.name, rs)
		// Where a member starts reading a partition is the committed offset
		// it resumed from (or the log start when there is none): a new
		// classic member resumes every partition it reads when it is made,
		// a KIP-848 member each partition when it is given it.
		g.mu.Lock()
		for _, r := range rs {
			if g.resumed[r.TP] {
				continue
			}
			g.resumed[r.TP] = true
			sent := g.joined
			if at, ok := g.assigned[r.TP]; ok {
				sent = at
			}
			g.rec.commit(Commit{Group: g.group, TP: r.TP, Offset: r.Offset, Source: "resume", Sent: sent, At: now}, "")
		}
		g.mu.Unlock()
		if len(rs) > 0 {
			g.commit(ctx, g.cl)
		}
		if g.kip848 {
			g.cl.AllowRebalance()
		}
	}
}

// commit commits what the member has read and records each partition the
// coordinator acknowledged.
func (g *groupConsumer) commit(ctx context.Context, cl *kgo.Client) {
	offsets := cl.UncommittedOffsets()
	if len(offsets) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sent := g.rec.since()
	cl.CommitOffsetsSync(cctx, offsets, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			return
		}
		at := g.rec.since()
		asked := map[TP]int64{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				asked[TP{t.Topic, p.Partition}] = p.Offset
			}
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 {
					tp := TP{t.Topic, p.Partition}
					g.rec.commit(Commit{Group: g.group, TP: tp, Offset: asked[tp], Source: "commit", Sent: sent, At: at}, g.name)
				}
			}
		}
	})
}

// watchCommits asks the group's committed offsets of every partition of
// topic every interval (one request at a time, each stamped with when it
// was sent and answered) until ctx ends. A partition without a committed
// offset is recorded as -1: a group whose commits vanish (a coordinator
// that lost its __consumer_offsets partition) is an OFFSET-REGRESSION.
func watchCommits(ctx context.Context, seeds []string, group, topic string, rec *recorder, interval time.Duration) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sent := rec.since()
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := adm.FetchOffsetsForTopics(rctx, group, topic)
		cancel()
		at := rec.since()
		if err != nil {
			continue
		}
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil {
				rec.commit(Commit{Group: group, TP: TP{o.Topic, o.Partition}, Offset: o.At, Source: "fetch", Sent: sent, At: at}, "")
			}
		})
	}
}

// trimKeep is how many of a partition's newest records a trim keeps.
const trimKeep = 50

// trimRecords deletes the old records of the trimmed topics every interval
// until ctx ends: DeleteRecords to the high watermark less trimKeep, when
// that is past the last acknowledged trim, one request at a time with a 5 s
// timeout. Each partition asked is recorded (a Trim), acknowledged or not;
// after an acknowledged one, no read may start below its low watermark
// again (UNDELETED).
func trimRecords(ctx context.Context, seeds []string, topics []topicSpec, rec *recorder, interval time.Duration) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(3*time.Second))
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(5000)
	last := map[TP]int64{}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, t := range topics {
			if !t.trimmed {
				continue
			}
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ends, err := adm.ListEndOffsets(lctx, t.name)
			cancel()
			if err != nil {
				continue
			}
			var o kadm.Offsets
			ends.Each(func(e kadm.ListedOffset) {
				if off := e.Offset - trimKeep; e.Err == nil && off > last[TP{e.Topic, e.Partition}] {
					o.AddOffset(e.Topic, e.Partition, off, -1)
				}
			})
			if len(o) == 0 {
				continue
			}
			sent := rec.since()
			// Not cancelled with ctx: a request the client gives up on may
			// still take effect at the broker, and the final read (which
			// waits for this function to return) must not run beside it.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			resp, err := adm.DeleteRecords(dctx, o)
			cancel()
			at := rec.since()
			o.Each(func(asked kadm.Offset) {
				tp := TP{asked.Topic, asked.Partition}
				tr := Trim{TP: tp, Offset: asked.At, LowWatermark: -1, Sent: sent, At: at}
				if d, ok := resp.Lookup(asked.Topic, asked.Partition); err == nil && ok && d.Err == nil {
					tr.Acked, tr.LowWatermark = true, d.LowWatermark
					last[tp] = max(last[tp], asked.At)
				}
				rec.trim(tr)
			})
		}
	}
}
