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
func Run(ctx context.Context, cfg Config) (*Verdict, error) {
	cfg.defaults()
	sched, err := ScheduleNamed(cfg.Schedule)
	if err != nil {
		return nil, err
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = sched.Nodes
	}
	if cfg.Nodes < sched.Nodes {
		return nil, fmt.Errorf("schedule %s needs %d nodes", sched.Name, sched.Nodes)
	}
	cfg.NATSCluster = cfg.NATSCluster || sched.NATSCluster
	cfg.Transactions = cfg.Transactions || sched.Transactions
	cfg.ShareGroups = cfg.ShareGroups || sched.ShareGroups
	cfg.needNet = slices.ContainsFunc(sched.Kinds, func(k FaultKind) bool { return k == PartNode || k == PartNATS || k == PartS3 })
	if ents, err := os.ReadDir(cfg.Out); err != nil {
		return nil, err
	} else if len(ents) > 0 {
		// A NATS store or bucket left by another run would be its state.
		return nil, fmt.Errorf("run directory %s is not empty", cfg.Out)
	}
	rec := newRecorder(cfg.Log)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec.logf("schedule %s seed %d duration %v nodes %d out %s", sched.Name, cfg.Seed, cfg.Duration, cfg.Nodes, cfg.Out)
	c, err := startCluster(ctx, &cfg, log)
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("starting the cluster: %w", err)
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
		return nil, err
	}
	var names []string
	for _, t := range created {
		names = append(names, t.name)
	}
	f, err := newFaulter(c, rec, names, groupName)
	if err != nil {
		return nil, err
	}
	defer f.close()
	if _, err := f.waitSettled(ctx, 60*time.Second); err != nil {
		return nil, fmt.Errorf("cluster before the run: %w", err)
	}
	if sched.TierOps {
		f.bucket = newBucketOps(f)
		if err := f.bucket.setup(ctx); err != nil {
			return nil, fmt.Errorf("the bucket ops' topics: %w", err)
		}
	}
	rec.logf("cluster up: %d nodes, NATS servers %d, network faults %v", len(c.Nodes), len(c.nats), c.net.ok)

	// Workload.
	wctx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var wg sync.WaitGroup
	var producers []*producer
	var strong, weak []topicSpec
	for _, t := range topics {
		if t.leaderAcks {
			weak = append(weak, t)
		} else {
			strong = append(strong, t)
		}
	}
	for i := range cfg.Producers {
		p, err := newProducer(fmt.Sprintf("p%d", i), c.seeds(), strong, cfg.Rate, false, rec)
		if err != nil {
			return nil, err
		}
		producers = append(producers, p)
	}
	if len(weak) > 0 {
		p, err := newProducer("pa1", c.seeds(), weak, cfg.Rate, true, rec)
		if err != nil {
			return nil, err
		}
		producers = append(producers, p)
	}
	var consumers []*consumer
	for _, t := range topics {
		cn, err := newConsumer("c-"+t.name, c.seeds(), t, rec)
		if err != nil {
			return nil, err
		}
		consumers = append(consumers, cn)
	}
	// The classic group's member, and the KIP-848 group's two members.
	var groups []*groupConsumer
	for _, m := range []struct {
		name, group string
		kip848      bool
		life        time.Duration
	}{{"g0", groupName, false, memberLife}, {"k0", group848Name, true, 11 * time.Second}, {"k1", group848Name, true, 17 * time.Second}} {
		gc, err := newGroupConsumer(m.name, m.group, c.seeds(), topics[0], rec, m.kip848, m.life)
		if err != nil {
			return nil, err
		}
		groups = append(groups, gc)
	}
	f.suspendGroup = func() (resume func()) {
		var resumes []func()
		for _, gc := range groups {
			resumes = append(resumes, gc.suspend())
		}
		return func() {
			for _, r := range resumes {
				r()
			}
		}
	}
	var tx *etl
	var adv *adversary
	if cfg.Transactions {
		if tx, err = newETL("etl", c.seeds(), topics[0], rec, etlDeliveryTimeout); err != nil {
			return nil, err
		}
		if adv, err = newAdversary(c.seeds(), topics[0], rec, cfg.Seed); err != nil {
			return nil, err
		}
	}
	var shares *shareWorkload
	sctx, stopShares := context.WithCancel(wctx)
	defer stopShares()
	var swg sync.WaitGroup
	if cfg.ShareGroups {
		// Two member slots on the plain topic; each member lives 13 s or
		// 19 s, then a new one joins.
		shares = newShareWorkload(c.seeds(), topics[0], rec)
		for i, life := range []time.Duration{13 * time.Second, 19 * time.Second} {
			swg.Add(1)
			go func() { defer swg.Done(); shares.member(sctx, fmt.Sprintf("s%d", i), life) }()
		}
	}
	pctx, stopProducers := context.WithCancel(wctx)
	defer stopProducers()
	cctx, stopConsumers := context.WithCancel(wctx)
	defer stopConsumers()
	for _, p := range producers {
		wg.Add(1)
		go func() { defer wg.Done(); p.run(pctx) }()
	}
	for _, cn := range consumers {
		wg.Add(1)
		go func() { defer wg.Done(); cn.run(cctx) }()
	}
	ectx, stopETL := context.WithCancel(wctx)
	defer stopETL()
	if tx != nil {
		wg.Add(2)
		go func() { defer wg.Done(); tx.run(ectx) }()
		go func() { defer wg.Done(); adv.run(pctx) }()
	}
	wg.Add(3)
	trimmed := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(trimmed)
		trimRecords(pctx, c.seeds(), topics, rec, 10*time.Second)
	}()
	for _, gc := range groups {
		wg.Add(1)
		go func() { defer wg.Done(); gc.run(cctx) }()
	}
	go func() {
		defer wg.Done()
		watchCommits(cctx, c.seeds(), groupName, topics[0].name, rec, 200*time.Millisecond)
	}()
	go func() {
		defer wg.Done()
		watchCommits(cctx, c.seeds(), group848Name, topics[0].name, rec, 200*time.Millisecond)
	}()
	defer wg.Wait()

	// Warm-up: some acknowledged records first.
	if !poll(60*time.Second, 100*time.Millisecond, func() bool { return len(rec.history().Acks) >= 50 }) {
		return nil, fmt.Errorf("warm-up: fewer than 50 records acknowledged in 60 s")
	}

	// Faults.
	plan := sched.Plan(cfg.Seed, cfg.Duration, c.net.ok)
	rec.logf("plan: %d events: %s", len(plan), strings.Join(kindsIn(plan), " "))
	phase := time.Now()
	fctx, stopFaults := context.WithTimeout(ctx, cfg.Duration)
	var fwg sync.WaitGroup
	byTrack := map[string][]Event{}
	for _, e := range plan {
		byTrack[e.Kind.track()] = append(byTrack[e.Kind.track()], e)
	}
	for _, evs := range byTrack {
		fwg.Add(1)
		go func() { defer fwg.Done(); f.runTrack(fctx, phase, evs) }()
	}
	fwg.Wait()
	stopFaults()

	// Heal.
	rec.logf("healing")
	healBegin := time.Now()
	healErr := f.healAll()
	rec.healed()
	if healErr == nil {
		_, healErr = f.waitSettled(ctx, cfg.HealBound-time.Since(healBegin))
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
	poll(cfg.ResumeBound, 200*time.Millisecond, allResumed)
	stopProducers()
	for _, p := range producers {
		<-p.done
	}
	<-trimmed // its last DeleteRecords answered: none runs beside the final read
	rec.logf("producers stopped")

	// The consumers read up to the end, then stop.
	ends := map[string]map[int32]int64{}
	if err := func() error {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		le, err := f.adm.ListEndOffsets(lctx, names...)
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
		rec.logf("end offsets: %v", err)
	}
	poll(60*time.Second, 200*time.Millisecond, func() bool {
		for _, cn := range consumers {
			if !cn.caughtUp(ends[cn.topic.name]) {
				return false
			}
		}
		return true
	})
	stopConsumers()
	for _, cn := range consumers {
		<-cn.done
	}
	var shareHist *ShareHistory
	if shares != nil {
		// Records a member held when it closed, or whose acceptance a
		// failover lost, come back after their lock (10 s).
		acks := rec.history().Acks
		drained := poll(90*time.Second, 200*time.Millisecond, func() bool { return shares.acceptedAll(acks) })
		stopShares()
		swg.Wait()
		shareHist = shares.history(drained)
		rec.logf("share group: %d deliveries, drained %v", len(shareHist.Deliveries), drained)
	}
	for _, gc := range groups {
		<-gc.done
	}
	var etlHist *ETLHistory
	if tx != nil {
		etlHist = drainETL(ctx, tx, f.adm, ends[topics[0].name], stopETL)
		rec.logf("etl: %d transactions committed, %d aborted, %d session restarts, drained %v", etlHist.Commits, etlHist.Aborts, etlHist.Restarts, etlHist.Drained)
		<-adv.done // stopped with the producers
		etlHist.Adversary = adv.history()
		rec.logf("adversary: sent %v, refused %v, acknowledged %d", etlHist.Adversary.Sent, etlHist.Adversary.Refused, etlHist.Adversary.AcceptedTotal)
		// The pipeline's last transaction, if its session stopped inside
		// one, ends by its timeout (15 s) at the next abort check (10 s).
		etlHist.Stable = stableOffsets(ctx, f.adm, []topicSpec{topics[0], tx.out}, 90*time.Second)
		stuck := 0
		for _, s := range etlHist.Stable {
			if s.Err != "" || s.LSO != s.HW {
				stuck++
			}
		}
		rec.logf("last stable offsets: %d partitions checked, %d below their high watermark", len(etlHist.Stable), stuck)
	}

	h := rec.history()
	h.ResumeBound = cfg.ResumeBound
	for _, t := range topics {
		if t.compacted {
			h.Compacted = append(h.Compacted, t.name)
		}
		if t.leaderAcks {
			h.LeaderAcks = append(h.LeaderAcks, t.name)
		}
	}
	rec.logf("final read")
	rec.logf("%d DeleteRecords acknowledged", len(h.Trims))
	h.Final = finalRead(ctx, c, topics)
	h.Replicas = replicaLogs(c, topics, h.Final)
	if etlHist != nil {
		etlHist.Outputs = readCommitted(ctx, c.seeds(), f.adm, tx.out)
		h.ETL = etlHist
	}
	h.Share = shareHist
	if f.bucket != nil {
		h.TierOps = f.bucket.final(ctx)
		rec.logf("bucket ops: %s", h.TierOps.Summary())
	}
	h.Bucket, h.Referenced, err = bucketAndMetadata(ctx, c)
	if err != nil {
		rec.logf("bucket check skipped: %v", err)
		h.Bucket = nil
	}
	// The reconciler deletes an orphan on its next pass past the grace.
	h.OrphanGrace = cfg.OrphanGrace + 10*time.Second
	res := Check(h)

	f.mu.Lock()
	windows := slices.Clone(f.windows)
	f.mu.Unlock()
	v := newVerdict(&cfg, sched, h, res, windows, rec, plan, c)
	if err := v.write(cfg.Out, h, rec); err != nil {
		return v, err
	}
	if !cfg.KeepData && v.Total == 0 {
		for _, n := range c.Nodes {
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
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		starts, err1 := adm.ListStartOffsets(lctx, t.name)
		ends, err2 := adm.ListEndOffsets(lctx, t.name)
		cancel()
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
			fr.Records, err = readPartition(ctx, c.seeds(), fr.TP, fr.LogStart, fr.HW)
			if err != nil {
				fr.Err = err.Error()
			}
			out = append(out, fr)
		}
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
