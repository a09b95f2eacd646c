package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/restore"
	"github.com/shale-io/shale/segment/batch"
)

// Config is one chaos run.
type Config struct {
	Schedule string
	Seed     int64
	// Duration is the fault phase; the run adds the cluster start, a
	// warm-up, the heal, a resume phase and the checks.
	Duration time.Duration
	// Nodes is the cluster size (0: the schedule's).
	Nodes int
	// Out is the run's directory: logs, data dirs, verdict.json,
	// timeline.svg, history.json. It must exist.
	Out string
	// Shale is the shale binary, VersityGW the S3 test server, Self a
	// binary that calls MaybeRunChild first (the NATS servers run as its
	// children).
	Shale, VersityGW, Self string

	// Rate is records per second per producer (default 20), Producers how
	// many (default 2).
	Rate, Producers int
	// Session is the broker session and controller lease (default 2 s).
	Session time.Duration
	// OrphanGrace is the nodes' remote_orphan_grace (default 15 s).
	OrphanGrace time.Duration
	// HealBound bounds the heal; ResumeBound how long after it every
	// producer and consumer must have made progress (defaults 60 s, 30 s).
	HealBound, ResumeBound time.Duration
	// NATSCluster runs three NATS servers (also set by the schedule).
	NATSCluster bool
	// Transactions adds the transactional read-process-write workload (a
	// franz-go GroupTransactSession from the plain topic to etl-out) and
	// its exactly-once check.
	Transactions bool
	// ShareGroups adds the share group workload (KIP-932 members on the
	// plain topic, share.go) and its checks; the nodes start share groups
	// at the log start (share.auto.offset.reset=earliest).
	ShareGroups bool
	// WidePartitions adds a topic "wide" of that many partitions (RF=3,
	// min.insync.replicas=2), written by the idempotent producers beside
	// the others and read back under the same checks: a fault schedule on
	// a node that leads hundreds of partitions (issue 23). 0: none.
	WidePartitions int32
	// KeepData keeps the nodes' data dirs and the bucket after the run.
	KeepData bool
	// needNet: the schedule has network partitions (set by Run); only then
	// does the suite set up its iptables chain.
	needNet bool
	// Log receives progress lines (nil: none).
	Log io.Writer
}

func (cfg *Config) defaults() {
	if cfg.Rate == 0 {
		cfg.Rate = 20
	}
	if cfg.Producers == 0 {
		cfg.Producers = 2
	}
	if cfg.Session == 0 {
		cfg.Session = 2 * time.Second
	}
	if cfg.OrphanGrace == 0 {
		cfg.OrphanGrace = 15 * time.Second
	}
	if cfg.HealBound == 0 {
		cfg.HealBound = 60 * time.Second
	}
	if cfg.ResumeBound == 0 {
		cfg.ResumeBound = 30 * time.Second
	}
}

const groupName = "chaos-g"

// group848Name is the workload's KIP-848 consumer group.
const group848Name = "chaos-g848"

// Run runs one chaos run and returns its verdict (also written to
// cfg.Out). An error means the run could not be made (the cluster did not
// start), not that it found violations.
//
// A run is its phases, in order: start the cluster, start the workload,
// warm up, run the schedule's faults, heal, stop the workload, verify,
// write the verdict.
func Run(ctx context.Context, cfg Config) (*Verdict, error) {
	sched, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	r := &run{cfg: &cfg, sched: sched, rec: newRecorder(cfg.Log)}
	defer r.close()
	if err := r.startCluster(ctx); err != nil {
		return nil, err
	}
	if err := r.startWorkload(); err != nil {
		return nil, err
	}
	if err := r.warmUp(); err != nil {
		return nil, err
	}
	plan := r.runFaults(ctx)
	r.heal(ctx)
	shareHist, etlHist := r.stopWorkload(ctx)
	h, res := r.verify(ctx, shareHist, etlHist)
	return r.writeVerdict(h, res, plan)
}

// prepare applies the defaults and the schedule named by cfg.Schedule to
// cfg, and returns that schedule. It fails when the schedule is unknown,
// needs more nodes than cfg.Nodes, or the run directory is missing or not
// empty.
func (cfg *Config) prepare() (Schedule, error) {
	cfg.defaults()
	sched, err := ScheduleNamed(cfg.Schedule)
	if err != nil {
		return Schedule{}, err
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = sched.Nodes
	}
	if cfg.Nodes < sched.Nodes {
		return Schedule{}, fmt.Errorf("schedule %s needs %d nodes", sched.Name, sched.Nodes)
	}
	cfg.NATSCluster = cfg.NATSCluster || sched.NATSCluster
	cfg.Transactions = cfg.Transactions || sched.Transactions
	cfg.ShareGroups = cfg.ShareGroups || sched.ShareGroups
	cfg.needNet = slices.ContainsFunc(sched.Kinds, func(k FaultKind) bool { return k == PartNode || k == PartNATS || k == PartS3 })
	if ents, err := os.ReadDir(cfg.Out); err != nil {
		return Schedule{}, err
	} else if len(ents) > 0 {
		// A NATS store or bucket left by another run would be its state.
		return Schedule{}, fmt.Errorf("run directory %s is not empty", cfg.Out)
	}
	return sched, nil
}

// run is one chaos run's state, handed from phase to phase. Only Run's
// goroutine uses it.
type run struct {
	cfg   *Config
	sched Schedule
	rec   *recorder

	// Set by startCluster.
	c      *Cluster
	f      *faulter
	topics []topicSpec // the workload's topics
	names  []string    // every topic created: topics, and the ETL's output

	// Set by startWorkload once every goroutine of the workload runs.
	w *workload
}

// close releases what the phases started, last first: it stops the
// workload (cancels its contexts, waits for its goroutines), closes the
// faulter's admin client, then stops the cluster. It is Run's one
// deferred call.
func (r *run) close() {
	if r.w != nil {
		r.w.close()
	}
	if r.f != nil {
		r.f.close()
	}
	if r.c != nil {
		r.c.Close()
	}
}

// startCluster is the first phase: it starts the cluster (nodes, NATS,
// the S3 server), creates the workload's topics with replication factor
// min(3, nodes), makes the faulter and waits up to 60 s for the cluster to
// settle, then sets up the schedule's bucket ops. An error means the run
// cannot be made; whatever was started is left in r for close.
func (r *run) startCluster(ctx context.Context) error {
	cfg, rec := r.cfg, r.rec
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec.logf("schedule %s seed %d duration %v nodes %d out %s", r.sched.Name, cfg.Seed, cfg.Duration, cfg.Nodes, cfg.Out)
	c, err := startCluster(ctx, cfg, log)
	r.c = c
	if err != nil {
		return fmt.Errorf("starting the cluster: %w", err)
	}
	if !c.net.ok {
		rec.logf("network partitions unavailable: %s", c.net.why)
	}
	topics := workloadTopics()
	if cfg.WidePartitions > 0 {
		topics = append(topics, topicSpec{name: "wide", parts: cfg.WidePartitions,
			configs: map[string]string{"min.insync.replicas": "2", "remote.storage.enable": "false"}})
	}
	created := topics
	if cfg.Transactions {
		created = append(slices.Clone(topics), etlOutputTopic(topics[0]))
	}
	if err := createTopics(ctx, c, created, int16(min(3, cfg.Nodes))); err != nil {
		return err
	}
	var names []string
	for _, t := range created {
		names = append(names, t.name)
	}
	r.topics, r.names = topics, names
	f, err := newFaulter(c, rec, names, groupName)
	if err != nil {
		return err
	}
	r.f = f
	if _, err := f.waitSettled(ctx, 60*time.Second); err != nil {
		return fmt.Errorf("cluster before the run: %w", err)
	}
	if r.sched.TierOps {
		f.bucket = newBucketOps(f)
		if err := f.bucket.setup(ctx); err != nil {
			return fmt.Errorf("the bucket ops' topics: %w", err)
		}
	}
	rec.logf("cluster up: %d nodes, NATS servers %d, network faults %v", len(c.Nodes), len(c.nats), c.net.ok)
	return nil
}

// startWorkload is the second phase: it makes the workload's clients and
// starts their goroutines, and lets the faulter suspend the group members.
// On an error nothing of the workload runs.
func (r *run) startWorkload() error {
	w, err := newWorkload(r.cfg, r.c.seeds(), r.topics, r.rec)
	if err != nil {
		return err
	}
	r.f.suspendGroup = w.suspendGroups
	w.start(r.c.seeds(), r.topics, r.rec)
	r.w = w
	return nil
}

// warmUp waits up to 60 s for the first 50 acknowledged records, before
// any fault.
func (r *run) warmUp() error {
	if !poll(60*time.Second, 100*time.Millisecond, func() bool { return len(r.rec.history().Acks) >= 50 }) {
		return fmt.Errorf("warm-up: fewer than 50 records acknowledged in 60 s")
	}
	return nil
}

// runFaults plans the schedule for the seed and Config.Duration and runs
// it: one goroutine a track, each applying and healing its events in
// time. It returns when every track is done or Duration has passed, with
// the plan it ran.
func (r *run) runFaults(ctx context.Context) []Event {
	plan := r.sched.Plan(r.cfg.Seed, r.cfg.Duration, r.c.net.ok)
	r.rec.logf("plan: %d events: %s", len(plan), strings.Join(kindsIn(plan), " "))
	phase := time.Now()
	fctx, stopFaults := context.WithTimeout(ctx, r.cfg.Duration)
	var fwg sync.WaitGroup
	byTrack := map[string][]Event{}
	for _, e := range plan {
		byTrack[e.Kind.track()] = append(byTrack[e.Kind.track()], e)
	}
	for _, evs := range byTrack {
		fwg.Add(1)
		go func() { defer fwg.Done(); r.f.runTrack(fctx, phase, evs) }()
	}
	fwg.Wait()
	stopFaults()
	return plan
}

// heal heals every fault still applied and waits for the cluster to settle
// within Config.HealBound; a failure of either is the history's HealErr.
// Then it waits up to Config.ResumeBound for every actor of the workload
// to make progress again (the checker judges whether each did).
func (r *run) heal(ctx context.Context) {
	rec := r.rec
	rec.logf("healing")
	healBegin := time.Now()
	healErr := r.f.healAll()
	rec.healed()
	if healErr == nil {
		_, healErr = r.f.waitSettled(ctx, r.cfg.HealBound-time.Since(healBegin))
	}
	if healErr != nil {
		rec.mu.Lock()
		rec.h.HealErr = healErr.Error()
		rec.mu.Unlock()
	}
	rec.logf("healed in %v (err %v)", time.Since(healBegin).Round(time.Millisecond), healErr)

	// Resume: every actor must make progress within the bound.
	allResumed := func() bool {
		for _, a := range rec.history().Actors {
			if a.ResumedAt == 0 {
				return false
			}
		}
		return true
	}
	poll(r.cfg.ResumeBound, 200*time.Millisecond, allResumed)
}

// stopWorkload stops the producers (and the trimmer with them), lets the
// consumers read up to the end offsets, then stops them; drains the share
// group and the ETL pipeline, when they run, and returns their histories
// (nil when they do not).
func (r *run) stopWorkload(ctx context.Context) (*ShareHistory, *ETLHistory) {
	w, rec := r.w, r.rec
	w.stopProducers()
	for _, p := range w.producers {
		<-p.done
	}
	<-w.trimmed // its last DeleteRecords answered: none runs beside the final read
	rec.logf("producers stopped")

	// The consumers read up to the end, then stop.
	ends := r.endOffsets(ctx)
	poll(60*time.Second, 200*time.Millisecond, func() bool {
		for _, cn := range w.consumers {
			if !cn.caughtUp(ends[cn.topic.name]) {
				return false
			}
		}
		return true
	})
	w.stopConsumers()
	for _, cn := range w.consumers {
		<-cn.done
	}
	var shareHist *ShareHistory
	if w.shares != nil {
		shareHist = r.drainShares()
	}
	for _, gc := range w.groups {
		<-gc.done
	}
	var etlHist *ETLHistory
	if w.tx != nil {
		etlHist = r.drainETL(ctx, ends[r.topics[0].name])
	}
	return shareHist, etlHist
}

// endOffsets lists the end offsets of every topic created, by topic and
// partition; on an error it logs it and returns what it has (nothing).
func (r *run) endOffsets(ctx context.Context) map[string]map[int32]int64 {
	ends := map[string]map[int32]int64{}
	if err := func() error {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		le, err := r.f.adm.ListEndOffsets(lctx, r.names...)
		if err != nil {
			return err
		}
		le.Each(func(o kadm.ListedOffset) {
			if ends[o.Topic] == nil {
				ends[o.Topic] = map[int32]int64{}
			}
			ends[o.Topic][o.Partition] = o.Offset
		})
		return nil
	}(); err != nil {
		r.rec.logf("end offsets: %v", err)
	}
	return ends
}

// drainShares waits up to 90 s for the share group to accept every
// acknowledged record, stops its members and returns its history.
func (r *run) drainShares() *ShareHistory {
	w := r.w
	// Records a member held when it closed, or whose acceptance a
	// failover lost, come back after their lock (10 s).
	acks := r.rec.history().Acks
	drained := poll(90*time.Second, 200*time.Millisecond, func() bool { return w.shares.acceptedAll(acks) })
	w.stopShares()
	w.swg.Wait()
	shareHist := w.shares.history(drained)
	r.rec.logf("share group: %d deliveries, drained %v", len(shareHist.Deliveries), drained)
	return shareHist
}

// drainETL lets the ETL pipeline consume its input up to end (by
// partition) and stops it, collects the adversary's history, and waits up
// to 90 s for the last stable offsets of its input and output to reach
// their high watermarks.
func (r *run) drainETL(ctx context.Context, end map[int32]int64) *ETLHistory {
	w, rec := r.w, r.rec
	etlHist := drainETL(ctx, w.tx, r.f.adm, end, w.stopETL)
	rec.logf("etl: %d transactions committed, %d aborted, %d session restarts, drained %v", etlHist.Commits, etlHist.Aborts, etlHist.Restarts, etlHist.Drained)
	<-w.adv.done // stopped with the producers
	etlHist.Adversary = w.adv.history()
	rec.logf("adversary: sent %v, refused %v, acknowledged %d", etlHist.Adversary.Sent, etlHist.Adversary.Refused, etlHist.Adversary.AcceptedTotal)
	// The pipeline's last transaction, if its session stopped inside
	// one, ends by its timeout (15 s) at the next abort check (10 s).
	etlHist.Stable = stableOffsets(ctx, r.f.adm, []topicSpec{r.topics[0], w.tx.out}, 90*time.Second)
	stuck := 0
	for _, s := range etlHist.Stable {
		if s.Err != "" || s.LSO != s.HW {
			stuck++
		}
	}
	rec.logf("last stable offsets: %d partitions checked, %d below their high watermark", len(etlHist.Stable), stuck)
	return etlHist
}

// verify completes the history with what the cluster holds once the
// workload has stopped (the final read of every partition, each replica's
// log, the ETL's committed output, the bucket ops' outcome, the bucket and
// its metadata) and checks it.
func (r *run) verify(ctx context.Context, shareHist *ShareHistory, etlHist *ETLHistory) (*History, Result) {
	c, rec := r.c, r.rec
	h := rec.history()
	h.ResumeBound = r.cfg.ResumeBound
	for _, t := range r.topics {
		if t.compacted {
			h.Compacted = append(h.Compacted, t.name)
		}
		if t.leaderAcks {
			h.LeaderAcks = append(h.LeaderAcks, t.name)
		}
	}
	rec.logf("final read")
	rec.logf("%d DeleteRecords acknowledged", len(h.Trims))
	h.Final = finalRead(ctx, c, r.topics)
	h.Replicas = replicaLogs(c, r.topics, h.Final)
	if etlHist != nil {
		etlHist.Outputs = readCommitted(ctx, c.seeds(), r.f.adm, r.w.tx.out)
		h.ETL = etlHist
	}
	h.Share = shareHist
	if r.f.bucket != nil {
		h.TierOps = r.f.bucket.final(ctx)
		rec.logf("bucket ops: %s", h.TierOps.Summary())
	}
	var err error
	h.Bucket, h.Referenced, err = bucketAndMetadata(ctx, c)
	if err != nil {
		rec.logf("bucket check skipped: %v", err)
		h.Bucket = nil
	}
	// The reconciler deletes an orphan on its next pass past the grace.
	h.OrphanGrace = r.cfg.OrphanGrace + 10*time.Second
	return h, Check(h)
}

// writeVerdict makes the verdict of the checked history and writes it to
// Config.Out with the history and the timeline; a clean run's node data
// dirs are removed unless Config.KeepData. The verdict is returned also
// when writing it failed.
func (r *run) writeVerdict(h *History, res Result, plan []Event) (*Verdict, error) {
	cfg := r.cfg
	r.f.mu.Lock()
	windows := slices.Clone(r.f.windows)
	r.f.mu.Unlock()
	v := newVerdict(cfg, r.sched, h, res, windows, r.rec, plan, r.c)
	if err := v.write(cfg.Out, h, r.rec); err != nil {
		return v, err
	}
	if !cfg.KeepData && v.Total == 0 {
		for _, n := range r.c.Nodes {
			os.RemoveAll(n.Dir)
		}
	}
	return v, nil
}

// createTopics creates the workload's topics with replication factor rf.
func createTopics(ctx context.Context, c *Cluster, topics []topicSpec, rf int16) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range topics {
		cfgs := map[string]*string{}
		for k, v := range t.configs {
			cfgs[k] = &v
		}
		var lastErr error
		ok := poll(30*time.Second, 500*time.Millisecond, func() bool {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			resp, err := adm.CreateTopic(rctx, t.parts, rf, cfgs, t.name)
			if err == nil {
				err = resp.Err
			}
			lastErr = err
			return err == nil || strings.Contains(fmt.Sprint(err), "TOPIC_ALREADY_EXISTS")
		})
		if !ok {
			return fmt.Errorf("creating %s: %w", t.name, lastErr)
		}
	}
	return nil
}

// finalRead reads every partition from its log start (the cold tier
// included) to its high watermark, each with its own bound.
func finalRead(ctx context.Context, c *Cluster, topics []topicSpec) []FinalRead {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		return nil
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var out []FinalRead
	for _, t := range topics {
		out = append(out, readToEnd(ctx, adm, t, adm.ListEndOffsets, func(tp TP, from, end int64) ([]Rec, error) {
			return readPartition(ctx, c.seeds(), tp, from, end)
		})...)
	}
	return out
}

// readToEnd reads each partition of t with read, from its log start to
// the end listEnds lists for it (ListEndOffsets: the high watermark;
// ListCommittedOffsets: the last stable offset). A partition whose
// offsets cannot be listed is a FinalRead with only that error.
func readToEnd(ctx context.Context, adm *kadm.Client, t topicSpec, listEnds func(context.Context, ...string) (kadm.ListedOffsets, error),
	read func(tp TP, from, end int64) ([]Rec, error)) []FinalRead {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	starts, err1 := adm.ListStartOffsets(lctx, t.name)
	ends, err2 := listEnds(lctx, t.name)
	cancel()
	var out []FinalRead
	for p := range t.parts {
		fr := FinalRead{TP: TP{t.name, p}}
		s, ok1 := starts.Lookup(t.name, p)
		e, ok2 := ends.Lookup(t.name, p)
		if err := errors.Join(err1, err2, s.Err, e.Err); err != nil || !ok1 || !ok2 {
			fr.Err = fmt.Sprintf("list offsets: %v", err)
			out = append(out, fr)
			continue
		}
		fr.LogStart, fr.HW = s.Offset, e.Offset
		var err error
		fr.Records, err = read(fr.TP, fr.LogStart, fr.HW)
		if err != nil {
			fr.Err = err.Error()
		}
		out = append(out, fr)
	}
	return out
}

// readPartition reads tp from offset from up to (not including) end.
func readPartition(ctx context.Context, seeds []string, tp TP, from, end int64) ([]Rec, error) {
	if end <= from {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{tp.Topic: {tp.Partition: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var recs []Rec
	next := from
	var lastErr error
	for next < end {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return recs, fmt.Errorf("read up to %d of [%d,%d) before the deadline (last error %v)", next, from, end, lastErr)
		}
		fs.EachError(func(_ string, _ int32, err error) { lastErr = err })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end || r.Offset < next {
				return
			}
			recs = append(recs, Rec{Offset: r.Offset, Key: string(r.Key), Value: string(r.Value), TS: r.Timestamp.UnixMilli()})
			next = r.Offset + 1
		})
		if len(recs) > 0 && recs[len(recs)-1].Offset == end-1 {
			break
		}
	}
	return recs, nil
}

// replicaLogs reads every node's local log of every partition below the
// final high watermark, once each replica holds it (or after 30 s).
func replicaLogs(c *Cluster, topics []topicSpec, finals []FinalRead) []ReplicaLog {
	hw := map[TP]int64{}
	for _, f := range finals {
		hw[f.TP] = f.HW
	}
	var out []ReplicaLog
	for _, t := range topics {
		if t.compacted {
			continue // replicas compact on their own schedules
		}
		for p := range t.parts {
			tp := TP{t.name, p}
			for _, n := range c.Nodes {
				var rl ReplicaLog
				poll(30*time.Second, 250*time.Millisecond, func() bool {
					rl = readReplica(n, tp, hw[tp])
					if len(rl.Batches) == 0 {
						return true // not a replica of it, or nothing local
					}
					return rl.Batches[len(rl.Batches)-1].Last >= hw[tp]-1
				})
				if len(rl.Batches) > 0 {
					out = append(out, rl)
				}
			}
		}
	}
	return out
}

// readReplica parses a node's .log files of tp: every whole batch below
// bound.
func readReplica(n *Node, tp TP, bound int64) ReplicaLog {
	rl := ReplicaLog{TP: tp, Node: n.ID, Bound: bound}
	names, _ := filepath.Glob(filepath.Join(logsDir(n, tp), "*.log"))
	slices.Sort(names)
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue // deleted by retention meanwhile
		}
		for pos := 0; pos+batch.HeaderSize <= len(b); {
			h, err := batch.ParseHeader(b[pos:])
			if err != nil || h.Length <= 0 || pos+h.Size() > len(b) {
				break
			}
			if h.LastOffset() >= bound {
				break
			}
			rl.Batches = append(rl.Batches, BatchSig{Base: h.BaseOffset, Last: h.LastOffset(), Hash: crc32.ChecksumIEEE(b[pos : pos+h.Size()])})
			pos += h.Size()
		}
	}
	return rl
}

// bucketAndMetadata lists the bucket's objects (versitygw's posix
// directory) and the keys the committed remote metadata references.
func bucketAndMetadata(ctx context.Context, c *Cluster) ([]BucketObject, []string, error) {
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", c.natsP[0]), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, nil, err
	}
	defer nc.Close()
	octx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	st, err := controlplane.Open(octx, nc, controlplane.StoreConfig{Replicas: len(c.nats), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	rl, err := controlplane.OpenRemoteLog(octx, st)
	if err != nil {
		return nil, nil, err
	}
	defer rl.Close()
	var refs []string
	for _, id := range rl.RemoteTopicIDs() {
		for _, p := range rl.RemotePartitions(id) {
			for _, s := range rl.ListRemoteSegments(id, p) {
				refs = append(refs, s.Objects...)
			}
		}
	}
	refs = append(refs, rl.QuarantinedObjects()...) // quarantined remote deletes: kept until purged
	root := filepath.Join(c.s3Dir, s3Bucket)
	now := time.Now()
	objs := []BucketObject{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir // versitygw's own
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if key := filepath.ToSlash(rel); !strings.HasPrefix(key, restore.MetaPrefix("")) {
			// The format marker and topic descriptors (package restore)
			// are no segment's: no record references them.
			objs = append(objs, BucketObject{Key: key, Age: now.Sub(info.ModTime())})
		}
		return nil
	})
	return objs, refs, err
}
