package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
)

// The bucket schedule's ops (issue 29): restores of a deleted topic from
// the bucket, point-in-time forks, and retention deletes that the
// quarantine undoes or purges, every other op of each kind with a kill -9
// of the node serving its request, while the node track kills other nodes.

// The fixed topics the bucket ops work on: filled once before the fault
// phase and uploaded whole, so that what a restore or a quarantine restore
// must give back is known exactly.
const (
	restoreTopic    = "bak" // deleted and restored from the bucket
	quarantineTopic = "qt"  // retention deletes into the quarantine, restored or purged
	forkSource      = "tiered"
	fixedRecords    = 600 // per partition of the restore topic; twice as many for the quarantine topic
)

// fixedTopics are the bucket ops' own topics: small segments, so that each
// partition has several in the bucket, and small local retention.
func fixedTopics() []topicSpec {
	cfg := func() map[string]string {
		return map[string]string{"min.insync.replicas": "2", "remote.storage.enable": "true",
			"segment.bytes": "16384", "local.retention.bytes": "16384"}
	}
	return []topicSpec{{name: restoreTopic, parts: 2, configs: cfg()}, {name: quarantineTopic, parts: 1, configs: cfg()}}
}

// fixedCount is how many records each partition of a fixed topic gets.
func fixedCount(topic string) int {
	if topic == quarantineTopic {
		return 2 * fixedRecords
	}
	return fixedRecords
}

// TierOpsHistory is what the bucket ops did and read (History.TierOps).
type TierOpsHistory struct {
	// Setup is each fixed topic's partitions read after they were filled
	// and every closed segment was uploaded: what restores must give back.
	Setup []FinalRead `json:"setup"`
	// Uploaded is each fixed partition's last tiered offset at the setup.
	Uploaded    map[string]int64 `json:"uploaded"`
	Restores    []RestoreOp      `json:"restores,omitempty"`
	Quarantines []QuarantineOp   `json:"quarantines,omitempty"`
	Forks       []ForkOp         `json:"forks,omitempty"`
	// Final are the fixed topics' and the forks' partitions read after the
	// heal.
	Final []FinalRead `json:"final"`
}

// Summary counts the ops of each kind, those during which the node
// serving them was killed, and those refused or skipped.
func (t *TierOpsHistory) Summary() string {
	restores, rk := len(t.Restores), 0
	for _, op := range t.Restores {
		if op.Killed != "" {
			rk++
		}
	}
	forks, fk, refused, byTime := len(t.Forks), 0, 0, 0
	for _, op := range t.Forks {
		if op.Killed != "" {
			fk++
		}
		if op.Refused != "" {
			refused++
		}
		if op.AtTimestamp != nil {
			byTime++
		}
	}
	var qr, qrk, qp, qpk, skipped int
	for _, op := range t.Quarantines {
		switch {
		case op.Skipped != "":
			skipped++
		case op.Purge:
			qp++
			if op.Killed != "" {
				qpk++
			}
		default:
			qr++
			if op.Killed != "" {
				qrk++
			}
		}
	}
	return fmt.Sprintf("%d restores (%d with the serving node killed), %d forks (%d killed, %d at a time, %d refused), "+
		"%d quarantine restores (%d killed), %d purges (%d killed), %d skipped", restores, rk, forks, fk, byTime, refused, qr, qrk, qp, qpk, skipped)
}

// RestoreOp is one delete of the restore topic and its restore from the
// bucket.
type RestoreOp struct {
	At time.Duration `json:"at"`
	// Killed is the node killed while it served the restore ("" none).
	Killed   string `json:"killed,omitempty"`
	Attempts int    `json:"attempts"`
	// Purged counts the deleted topic's quarantine entries purged after
	// the restore.
	Purged int `json:"purged,omitempty"`
	// Report is the last answer (status restored or exists).
	Report *adminapi.RestoredTopic `json:"report,omitempty"`
	Err    string                  `json:"err,omitempty"`
}

// QuarantineOp is one retention delete of the quarantine topic's segments
// and their restore (Purge false) or purge.
type QuarantineOp struct {
	At    time.Duration `json:"at"`
	Purge bool          `json:"purge"`
	// Before, Deleted and After are the log start before the retention
	// delete, after it, and after the restore or purge.
	Before  int64 `json:"before"`
	Deleted int64 `json:"deleted"`
	After   int64 `json:"after"`
	Entries int   `json:"entries"`
	// Skipped says why the op did nothing (no segment left to delete).
	Skipped string `json:"skipped,omitempty"`
	// SourcePurged counts the fork source's quarantine entries a purge
	// purged beside (its DeleteRecords deletes).
	SourcePurged int    `json:"source_purged,omitempty"`
	Killed       string `json:"killed,omitempty"`
	Err          string `json:"err,omitempty"`
}

// ForkOp is one fork of the tiered workload topic.
type ForkOp struct {
	At          time.Duration `json:"at"`
	Name        string        `json:"name"`
	AtOffset    int64         `json:"at_offset"`
	AtTimestamp *int64        `json:"at_timestamp,omitempty"`
	// Report is the fork's answer; Refused what a refused fork answered
	// (a cut past the uploaded end: not a violation).
	Report  *adminapi.ForkReport `json:"report,omitempty"`
	Refused string               `json:"refused,omitempty"`
	// Copied are the bucket's objects under the fork's own keys right after
	// it was made (it must have none: a fork costs metadata, not bytes).
	Copied []string `json:"copied,omitempty"`
	// Source is the source's partitions read from the fork's log start to
	// its cut right after the fork.
	Source []FinalRead `json:"source,omitempty"`
	// Writes are the records acknowledged to a producer of the fork.
	Writes []Ack  `json:"writes,omitempty"`
	Killed string `json:"killed,omitempty"`
	Err    string `json:"err,omitempty"`
}

// bucketOps runs the bucket schedule's ops against a cluster.
type bucketOps struct {
	f   *faulter
	api adminapi.Client

	mu    sync.Mutex
	h     TierOpsHistory
	forks int
	// runs counts each kind's ops: the first of each kind kills the node
	// serving it, the second does not, and so on, so that a run of a few
	// minutes kills a node during every kind of op.
	runs map[FaultKind]int
}

func newBucketOps(f *faulter) *bucketOps {
	return &bucketOps{f: f, api: adminapi.Client{Timeout: 60 * time.Second}, h: TierOpsHistory{Uploaded: map[string]int64{}},
		runs: map[FaultKind]int{}}
}

// setup creates and fills the fixed topics, waits until every closed
// segment is in the bucket and reads them back.
func (b *bucketOps) setup(ctx context.Context) error {
	c := b.f.c
	topics := fixedTopics()
	if err := createTopics(ctx, c, topics, 3); err != nil {
		return err
	}
	for _, t := range topics {
		for p := range t.parts {
			if err := b.fill(ctx, TP{t.name, p}, 0, fixedCount(t.name)); err != nil {
				return err
			}
		}
	}
	b.h.Setup = b.read(ctx, topics)
	for _, fr := range b.h.Setup {
		if fr.Err != "" || fr.LogStart != 0 || fr.HW != int64(fixedCount(fr.Topic)) {
			return fmt.Errorf("reading %s after the setup: log start %d, high watermark %d: %s", fr.TP, fr.LogStart, fr.HW, fr.Err)
		}
	}
	return nil
}

// fill writes records from..from+n-1 of tp's fixed sequence and waits
// until every closed segment of tp is in the bucket.
func (b *bucketOps) fill(ctx context.Context, tp TP, from, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.f.c.seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(8192)) // the filler compresses to nothing: segments must fill
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Value: []byte(Value(fmt.Sprintf("%s%d", tp.Topic, tp.Partition), int64(i), valueFill))})
	}
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = cl.ProduceSync(pctx, recs...).FirstErr()
	cancel()
	if err != nil {
		return fmt.Errorf("filling %s: %w", tp, err)
	}
	var last int64
	if !poll(90*time.Second, 250*time.Millisecond, func() bool {
		var ok bool
		last, ok = b.uploaded(ctx, tp)
		return ok
	}) {
		return fmt.Errorf("%s: closed segments not all uploaded in 90 s (%s)", tp, b.tierState(ctx, tp))
	}
	b.mu.Lock()
	b.h.Uploaded[tp.String()] = last
	b.mu.Unlock()
	return nil
}

// refill writes the quarantine topic's next fixedRecords and adds them
// to the setup read: what the topic must hold from then on.
func (b *bucketOps) refill(ctx context.Context, tp TP) error {
	b.mu.Lock()
	var s *FinalRead
	for i := range b.h.Setup {
		if b.h.Setup[i].TP == tp {
			s = &b.h.Setup[i]
		}
	}
	b.mu.Unlock()
	if s == nil {
		return fmt.Errorf("%s: no setup read", tp)
	}
	hw := s.HW
	if err := b.fill(ctx, tp, int(hw), fixedRecords); err != nil {
		return err
	}
	recs, err := readPartition(ctx, b.f.c.seeds(), tp, hw, hw+fixedRecords)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s.Records = append(s.Records, recs...)
	s.HW = hw + fixedRecords
	return nil
}

// uploaded returns tp's last tiered offset (the highest any node
// reports, -1 for none), ok when some node reports no closed segment of
// it left to upload.
func (b *bucketOps) uploaded(ctx context.Context, tp TP) (last int64, ok bool) {
	last = -1
	b.tierStatuses(ctx, tp, func(_ *Node, ps adminapi.TierPartitionStatus, err error) {
		if err != nil {
			return
		}
		last = max(last, ps.LastTieredOffset)
		if ps.UploadLagSegments == 0 && ps.LastTieredOffset >= 0 {
			ok = true
		}
	})
	return last, ok
}

// tierStatuses calls fn with tp's tier status as each live node reports
// it, or with the node's error.
func (b *bucketOps) tierStatuses(ctx context.Context, tp TP, fn func(n *Node, ps adminapi.TierPartitionStatus, err error)) {
	for _, n := range b.f.c.Nodes {
		if !n.Alive() || n.Paused() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := b.api.TierStatus(sctx, n.Admin, tp.Topic)
		cancel()
		if err != nil {
			fn(n, adminapi.TierPartitionStatus{}, err)
			continue
		}
		for _, ps := range st.Partitions {
			if ps.Partition == tp.Partition {
				fn(n, ps, nil)
			}
		}
	}
}

// tierState describes what each live node reports of tp's tiering.
func (b *bucketOps) tierState(ctx context.Context, tp TP) string {
	var out []string
	b.tierStatuses(ctx, tp, func(n *Node, ps adminapi.TierPartitionStatus, err error) {
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", n.Name, err))
		} else {
			out = append(out, fmt.Sprintf("%s: %+v", n.Name, ps))
		}
	})
	return strings.Join(out, "; ")
}

// read reads topics' partitions from their log starts to their high
// watermarks.
func (b *bucketOps) read(ctx context.Context, topics []topicSpec) []FinalRead {
	return finalRead(ctx, b.f.c, topics)
}

// server returns a live node's admin address other than skip.
func (b *bucketOps) server(pick int, skip string) (*Node, error) {
	var live []*Node
	for _, n := range b.f.c.Nodes {
		if n.Alive() && !n.Paused() && n.Name != skip {
			live = append(live, n)
		}
	}
	if len(live) == 0 {
		return nil, errors.New("no live node")
	}
	return live[pick%len(live)], nil
}

// killDuring runs call against node n; with kill set it kills n 20 to
// 320 ms (drawn from pick) after sending, unless another node is down or
// the call has returned, and says whether it did. Meanwhile every S3
// request waits 100 ms more, so that the kill lands inside the work the
// call asked for (a fork or a purge of a few objects takes less than the
// kill's delay otherwise). The node is started again by restartKilled.
func (b *bucketOps) killDuring(n *Node, pick int, kill bool, call func(node string) error) (killed bool, err error) {
	var timer *time.Timer
	var mu sync.Mutex
	returned := false
	if kill {
		b.f.c.proxy.SetDelay(100 * time.Millisecond)
		defer b.f.c.proxy.SetDelay(0)
		timer = time.AfterFunc(time.Duration(20+pick%7*50)*time.Millisecond, func() {
			mu.Lock()
			defer mu.Unlock()
			if returned {
				return
			}
			for _, o := range b.f.c.Nodes {
				if !o.Alive() || o.Paused() {
					return // the node track's fault: one node down at a time
				}
			}
			if n.Kill() == nil {
				killed = true
			}
		})
	}
	err = call(n.Admin)
	mu.Lock()
	defer mu.Unlock()
	returned = true
	if timer != nil {
		timer.Stop()
	}
	return killed, err
}

// retry asks call of a live node until after says the op is done, for at
// most 120 s: after gets call's error and returns whether the op is done
// and, when it is not, the error to remember. The first attempt kills -9
// the node serving it when kill is set (killDuring), and no later attempt
// goes to that node; it is started again before retry returns. It returns
// the node killed ("" none), the attempts made, and the last error (nil
// once done).
func (b *bucketOps) retry(ctx context.Context, pick int, kill bool, what string, call func(node string) error,
	after func(err error) (bool, error)) (killedName string, attempts int, last error) {
	var killed *Node
	deadline := time.Now().Add(120 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		skip := ""
		if killed != nil {
			skip = killed.Name
		}
		n, err := b.server(pick+attempts, skip)
		if err != nil {
			last = err
			time.Sleep(time.Second)
			continue
		}
		attempts++
		k, err := b.killDuring(n, pick, kill && killed == nil, call)
		if k {
			killed, killedName = n, n.Name
			b.f.rec.logf("bucket: killed %s while it served %s", n.Name, what)
		}
		done, lerr := after(err)
		if done {
			last = nil
			break
		}
		last = lerr
		time.Sleep(500 * time.Millisecond)
	}
	if killed != nil {
		if err := b.restartKilled(killed); err != nil && last == nil {
			last = err
		}
	}
	return killedName, attempts, last
}

// restartKilled starts a node killDuring killed.
func (b *bucketOps) restartKilled(n *Node) error {
	if n.Alive() {
		return nil
	}
	return b.f.restart(n)
}

// run applies one bucket op and records it; the op's own failures are
// recorded in its history, not returned, so that the checker judges them.
func (b *bucketOps) run(_ context.Context, e Event) (string, error) {
	// An op runs to its end (each bounds itself) even when the fault
	// phase ends under it: an op cut short would leave the fixed topics
	// in a state the checker cannot know.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.mu.Lock()
	b.runs[e.Kind]++
	nth := b.runs[e.Kind]
	b.mu.Unlock()
	kill := nth%2 == 1
	switch e.Kind {
	case Restore:
		op := b.restore(ctx, e.Pick, kill)
		b.mu.Lock()
		b.h.Restores = append(b.h.Restores, op)
		b.mu.Unlock()
		return restoreTopic, opErr(op.Err)
	case Fork:
		op := b.fork(ctx, e.Pick, kill, nth%4 == 3 || nth%4 == 0)
		b.mu.Lock()
		b.h.Forks = append(b.h.Forks, op)
		b.mu.Unlock()
		return op.Name, opErr(op.Err)
	case QuarantineRestore, QuarantinePurge:
		op := b.quarantine(ctx, e.Pick, kill, e.Kind == QuarantinePurge)
		b.mu.Lock()
		b.h.Quarantines = append(b.h.Quarantines, op)
		b.mu.Unlock()
		return quarantineTopic, opErr(op.Err)
	}
	return "", fmt.Errorf("not a bucket op: %s", e.Kind)
}

func opErr(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

// restore deletes the restore topic, waits until it is gone, and restores
// it from the bucket through a node's admin API (what shale topic restore
// sends), asking again, of another node, until the topic is restored.
func (b *bucketOps) restore(ctx context.Context, pick int, kill bool) RestoreOp {
	op := RestoreOp{At: b.f.rec.since()}
	adm := b.f.adm
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	var delErr error
	gone := poll(30*time.Second, 500*time.Millisecond, func() bool {
		resp, err := adm.DeleteTopics(dctx, restoreTopic)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			delErr = err
			return false
		}
		td, err := adm.ListTopics(dctx, restoreTopic)
		if err != nil {
			delErr = err
			return false
		}
		return errors.Is(td[restoreTopic].Err, kerr.UnknownTopicOrPartition)
	})
	cancel()
	if !gone {
		op.Err = fmt.Sprintf("deleting %s: not gone in 30 s (%v)", restoreTopic, delErr)
		return op
	}
	var last error
	op.Killed, op.Attempts, last = b.retry(ctx, pick, kill, "a restore of "+restoreTopic, func(node string) error {
		rep, err := b.api.Restore(ctx, node, adminapi.RestoreRequest{Topics: []string{restoreTopic}})
		if err == nil && len(rep.Topics) == 1 {
			rt := rep.Topics[0]
			op.Report = &rt
			if rt.Status != "restored" && rt.Status != "exists" {
				err = fmt.Errorf("status %s: %s", rt.Status, rt.Error)
			}
		} else if err == nil {
			err = fmt.Errorf("%d topics in the answer", len(rep.Topics))
		}
		return err
	}, func(err error) (bool, error) { return err == nil, err })
	if last != nil {
		op.Err = fmt.Sprintf("restore of %s after %d attempts: %v", restoreTopic, op.Attempts, last)
		return op
	}
	// The delete left the topic's objects in the quarantine (reason
	// topic_deleted); the restore lists them again. Purging those entries
	// now, as their grace ending would, must delete no object the
	// restored topic lists (the final read judges it).
	if c, err := b.entries(ctx, pick, restoreTopic); err == nil && c > 0 {
		if n, err := b.server(pick, ""); err == nil {
			pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			q, err := b.api.QuarantinePurge(pctx, n.Admin, adminapi.QuarantineRequest{Topic: restoreTopic})
			cancel()
			op.Purged = len(q.Entries)
			if err != nil {
				b.f.rec.logf("bucket: purging %s's quarantine after its restore: %v", restoreTopic, err)
			}
		}
	}
	return op
}

// fork forks the tiered workload topic at an offset inside what every
// partition has uploaded, or (atTime) at the timestamp of the record
// there, then checks that the bucket holds nothing under the fork's keys,
// reads the source's records below the cut and writes a few records to
// the fork.
func (b *bucketOps) fork(ctx context.Context, pick int, kill, atTime bool) ForkOp {
	b.mu.Lock()
	b.forks++
	op := ForkOp{At: b.f.rec.since(), Name: fmt.Sprintf("fork-%d", b.forks)}
	b.mu.Unlock()
	req := adminapi.ForkRequest{Source: forkSource, Name: op.Name}
	// A cut every partition can take: at or below the lowest last tiered
	// offset of the source's partitions (waiting for the first uploads).
	lowest := int64(-1)
	poll(60*time.Second, 500*time.Millisecond, func() bool {
		lowest = -1
		for p := range int32(2) {
			last, _ := b.uploaded(ctx, TP{forkSource, p})
			if last < 0 {
				return false
			}
			if lowest < 0 || last < lowest {
				lowest = last
			}
		}
		return true
	})
	cut := max(0, lowest-int64(pick%20))
	if !atTime {
		req.AtOffset = cut
	} else {
		ts := int64(-1)
		for p := range int32(2) {
			recs, err := readPartition(ctx, b.f.c.seeds(), TP{forkSource, p}, cut, cut+1)
			if err == nil && len(recs) == 1 && (ts < 0 || recs[0].TS < ts) {
				ts = recs[0].TS
			}
		}
		if ts < 0 {
			ts = time.Now().Add(-20 * time.Second).UnixMilli()
		}
		req.AtTimestamp = &ts
	}
	op.AtOffset, op.AtTimestamp = req.AtOffset, req.AtTimestamp
	killed, attempts, last := b.retry(ctx, pick, kill, "the fork "+op.Name, func(node string) error {
		rep, err := b.api.Fork(ctx, node, req)
		if err == nil {
			op.Report = &rep
		}
		return err
	}, func(err error) (bool, error) {
		if err == nil {
			return true, nil
		}
		if msg := err.Error(); errors.Is(err, adminapi.ErrHTTPStatus) && strings.Contains(msg, " 409 ") &&
			!strings.Contains(msg, "exists") && !strings.Contains(msg, "created") {
			op.Refused = msg // refused as the API says: nothing was made
			return true, nil
		}
		// A fork interrupted after its topic was made: the operator's
		// procedure is to delete it and fork again (restore/fork.go).
		b.deleteTopic(ctx, op.Name)
		return false, err
	})
	op.Killed = killed
	if last != nil {
		op.Err = fmt.Sprintf("fork %s after %d attempts: %v", op.Name, attempts, last)
		return op
	}
	if op.Report == nil {
		return op
	}
	copied, err := bucketKeysOf(b.f.c, op.Name, op.Report.TopicID)
	if err != nil {
		op.Err = fmt.Sprintf("listing the bucket: %v", err)
		return op
	}
	op.Copied = copied
	for _, fp := range op.Report.Partitions {
		tp := TP{forkSource, fp.Partition}
		fr := FinalRead{TP: tp, LogStart: fp.LogStartOffset, HW: fp.Cut}
		recs, err := readPartition(ctx, b.f.c.seeds(), tp, fp.LogStartOffset, fp.Cut)
		fr.Records = recs
		if err != nil {
			fr.Err = err.Error() // the source trimmed past the fork's log start meanwhile: judged on the acks
		}
		op.Source = append(op.Source, fr)
	}
	op.Writes, err = b.writeFork(ctx, op.Name, int32(len(op.Report.Partitions)))
	if err != nil {
		op.Err = fmt.Sprintf("writing to %s: %v", op.Name, err)
	}
	return op
}

// writeFork writes ten records to each partition of fork and returns
// those acknowledged.
func (b *bucketOps) writeFork(ctx context.Context, fork string, parts int32) ([]Ack, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.f.c.seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range parts {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: fork, Partition: p, Value: []byte(Value(fmt.Sprintf("%sw%d", fork, p), int64(i), 0))})
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	res := cl.ProduceSync(pctx, recs...)
	var acks []Ack
	for _, r := range res {
		if r.Err == nil {
			acks = append(acks, Ack{TP: TP{fork, r.Record.Partition}, Producer: fork, Value: string(r.Record.Value), Offset: r.Record.Offset})
		}
	}
	return acks, res.FirstErr()
}

// deleteTopic deletes name, best effort, and waits until it is gone.
func (b *bucketOps) deleteTopic(ctx context.Context, name string) {
	poll(30*time.Second, 500*time.Millisecond, func() bool {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		b.f.adm.DeleteTopics(dctx, name)
		td, err := b.f.adm.ListTopics(dctx, name)
		return err == nil && errors.Is(td[name].Err, kerr.UnknownTopicOrPartition)
	})
}

// quarantine lowers the quarantine topic's retention.bytes so that
// retention deletes its closed segments (into the quarantine), raises it
// again, and restores the quarantined segments (or purges them), asking
// again of another node until the log start is back (or the entries are
// gone).
func (b *bucketOps) quarantine(ctx context.Context, pick int, kill, purge bool) QuarantineOp {
	op := QuarantineOp{At: b.f.rec.since(), Purge: purge}
	tp := TP{quarantineTopic, 0}
	var err error
	if op.Before, err = b.logStart(ctx, tp); err != nil {
		op.Err = err.Error()
		return op
	}
	// retention.bytes at half the bucket's bytes deletes about the older
	// half of the remote segments, so that later ops find some left.
	segs, bytes := b.remote(ctx, tp)
	if segs < 2 {
		// Earlier purges took nearly all: write more first.
		if err := b.refill(ctx, tp); err != nil {
			op.Err = fmt.Sprintf("writing more to %s: %v", tp, err)
			return op
		}
		if segs, bytes = b.remote(ctx, tp); segs < 2 {
			op.Skipped = fmt.Sprintf("%d segments in the bucket after writing more: none to delete", segs)
			return op
		}
	}
	if err := b.retention(ctx, strconv.FormatInt(bytes/2, 10)); err != nil {
		op.Err = fmt.Sprintf("lowering retention.bytes: %v", err)
		return op
	}
	if !poll(60*time.Second, 250*time.Millisecond, func() bool {
		op.Deleted, err = b.logStart(ctx, tp)
		return err == nil && op.Deleted > op.Before
	}) {
		op.Err = fmt.Sprintf("retention did not move the log start from %d in 60 s (%v)", op.Before, err)
		b.retention(ctx, "")
		return op
	}
	if err := b.retention(ctx, ""); err != nil {
		op.Err = fmt.Sprintf("raising retention.bytes again: %v", err)
		return op
	}
	entries := func() (int, error) {
		return b.entries(ctx, pick, quarantineTopic)
	}
	if op.Entries, err = entries(); err != nil {
		op.Err = fmt.Sprintf("listing the quarantine: %v", err)
		return op
	}
	done := func() bool {
		if purge {
			n, err := entries()
			return err == nil && n == 0
		}
		s, err := b.logStart(ctx, tp)
		return err == nil && s <= op.Before
	}
	verb := map[bool]string{true: "purge", false: "restore"}[purge]
	req := adminapi.QuarantineRequest{Topic: quarantineTopic}
	killed, attempts, last := b.retry(ctx, pick, kill, "a quarantine "+verb, func(node string) error {
		var err error
		if purge {
			_, err = b.api.QuarantinePurge(ctx, node, req)
		} else {
			_, err = b.api.QuarantineRestore(ctx, node, req)
		}
		return err
	}, func(err error) (bool, error) {
		// The leader restores on its next pass; a purge interrupted by a
		// kill is finished a minute later (docs/tiering.md).
		if poll(15*time.Second, 250*time.Millisecond, done) {
			return true, nil
		}
		return false, cmp.Or(err, errors.New("not done within 15 s of the request"))
	})
	op.Killed = killed
	if last != nil {
		op.Err = fmt.Sprintf("quarantine %s after %d attempts: %v", verb, attempts, last)
	}
	op.After, _ = b.logStart(ctx, tp)
	if purge && last == nil {
		// The fork source's DeleteRecords deletes wait in the quarantine
		// too: purging them deletes only the objects no fork lists.
		if n, err := b.server(pick, ""); err == nil && func() bool { c, err := b.entries(ctx, pick, forkSource); return err == nil && c > 0 }() {
			pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			q, err := b.api.QuarantinePurge(pctx, n.Admin, adminapi.QuarantineRequest{Topic: forkSource})
			cancel()
			op.SourcePurged = len(q.Entries)
			if err != nil {
				b.f.rec.logf("bucket: purging %s's quarantine: %v", forkSource, err)
			}
		}
	}
	return op
}

// remote returns tp's remote segments and bytes, as the node reporting
// the most sees them.
func (b *bucketOps) remote(ctx context.Context, tp TP) (segs int, bytes int64) {
	b.tierStatuses(ctx, tp, func(_ *Node, ps adminapi.TierPartitionStatus, err error) {
		if err == nil && ps.RemoteSegments > segs {
			segs, bytes = ps.RemoteSegments, ps.RemoteBytes
		}
	})
	return segs, bytes
}

// entries counts topic's quarantine entries, as a live node lists them,
// asking again (another node) for up to 30 s.
func (b *bucketOps) entries(ctx context.Context, pick int, topic string) (int, error) {
	count, attempt := 0, 0
	var last error
	poll(30*time.Second, 250*time.Millisecond, func() bool {
		attempt++
		n, err := b.server(pick+attempt, "")
		if err != nil {
			last = err
			return ctx.Err() != nil
		}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		q, err := b.api.QuarantineList(lctx, n.Admin, topic)
		count, last = len(q.Entries), err
		return err == nil || ctx.Err() != nil
	})
	return count, last
}

// logStart returns tp's log start, asking again for up to 30 s while a
// node is down (kadm answers a shard error rather than retry).
func (b *bucketOps) logStart(ctx context.Context, tp TP) (int64, error) {
	var off int64 = -1
	var last error
	poll(30*time.Second, 250*time.Millisecond, func() bool {
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		so, err := b.f.adm.ListStartOffsets(lctx, tp.Topic)
		if err != nil {
			last = err
			return ctx.Err() != nil
		}
		o, ok := so.Lookup(tp.Topic, tp.Partition)
		switch {
		case !ok:
			last = fmt.Errorf("%s: no start offset", tp)
		case o.Err != nil:
			last = o.Err
		default:
			off, last = o.Offset, nil
			return true
		}
		return ctx.Err() != nil
	})
	return off, last
}

// retention sets the quarantine topic's retention.bytes (v "" removes it).
func (b *bucketOps) retention(ctx context.Context, v string) error {
	ac := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "retention.bytes"}
	if v != "" {
		ac = kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.bytes", Value: &v}
	}
	var last error
	if poll(30*time.Second, 500*time.Millisecond, func() bool {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := b.f.adm.AlterTopicConfigs(actx, []kadm.AlterConfig{ac}, quarantineTopic)
		if err == nil {
			for _, r := range resp {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		last = err
		return err == nil
	}) {
		return nil
	}
	return last
}

// final reads the fixed topics and the forks after the heal.
func (b *bucketOps) final(ctx context.Context) *TierOpsHistory {
	b.mu.Lock()
	h := b.h
	h.Restores, h.Quarantines, h.Forks = slices.Clone(b.h.Restores), slices.Clone(b.h.Quarantines), slices.Clone(b.h.Forks)
	b.mu.Unlock()
	topics := fixedTopics()
	for _, op := range h.Forks {
		if op.Report != nil {
			topics = append(topics, topicSpec{name: op.Name, parts: int32(len(op.Report.Partitions))})
		}
	}
	h.Final = b.read(ctx, topics)
	return &h
}

// bucketKeysOf lists the bucket's object keys under a topic's own prefix
// (<hash>/<topic>-<topicIdHex>/...), the restore metadata folder aside.
func bucketKeysOf(c *Cluster, topic, idHex string) ([]string, error) {
	root := filepath.Join(c.s3Dir, s3Bucket)
	dir := topic + "-" + idHex
	var keys []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "_shale" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), dir) {
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	return keys, err
}
