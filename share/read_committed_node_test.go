package share_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// txnProduce writes n records tag-0..tag-(n-1) to topic in one transaction
// of cl (a transactional client) and commits or aborts it. It returns the
// records' offsets.
func txnProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic, tag string, n int, commit bool) []int64 {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	offs := produceTagged(t, ctx, cl, topic, tag, n, 0)
	end := kgo.TryAbort
	if commit {
		end = kgo.TryCommit
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		t.Fatalf("end transaction of %s (commit %v): %v", tag, commit, err)
	}
	return offs
}

// produceTagged produces tag-0..tag-(n-1) to partition 0 of topic with cl,
// each value followed by "|" and pad bytes when pad > 0, and returns
// their offsets.
func produceTagged(t *testing.T, ctx context.Context, cl *kgo.Client, topic, tag string, n, pad int) []int64 {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := fmt.Sprintf("%s-%d", tag, i)
		if pad > 0 {
			v += "|" + strings.Repeat("x", pad)
		}
		recs[i] = &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", tag, err)
	}
	offs := make([]int64, 0, n)
	for _, r := range res {
		offs = append(offs, r.Record.Offset)
	}
	return offs
}

// tagOf is the tag of a delivered value "tag-i" or "tag-i|...".
func tagOf(v string) string {
	tag, _, _ := strings.Cut(v, "-")
	return tag
}

// deliveredTags counts the distinct values delivered per tag.
func deliveredTags(d *deliveries) map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for v := range d.m {
		out[tagOf(v)]++
	}
	return out
}

// TestShareGroupReadCommitted: share.isolation.level=read_committed
// (Kafka 4.1's share group config) on a real node, with franz-go's
// transactional producer and share consumer, and over raw ShareFetch.
// Two committed and two aborted transactions, plain records, then a
// transaction left open followed by plain records: a read_committed
// share group gets exactly the committed and plain records, never a
// record of an aborted transaction, and nothing at or past the open
// transaction's first offset (the last stable offset) until it commits;
// a ShareFetch's acquired records never reach the last stable offset and
// never name an aborted record, which is archived at once, so the
// share-partition start offset passes it. A read_uncommitted group
// (the default) gets every data record, aborted and open ones included.
// Before, the group config was refused (INVALID_CONFIG, "not built") and
// share groups read up to the high watermark with aborted records.
func TestShareGroupReadCommitted(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), fastShareGroups)
	addr := n.KafkaAddr()
	ctx := proctest.Context(t, 240*time.Second)
	cl := testnode.Client(t, addr)
	adm := kadm.NewClient(cl)
	const topic = "share-txn"
	testnode.CreateTopic(t, adm, topic, 1)
	for _, g := range []string{"rc-group", "rc-raw"} {
		if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, g, false, testnode.SetConfigOp("share.isolation.level", "read_committed")); code != 0 {
			t.Fatalf("share.isolation.level=read_committed on %s: %v %q", g, kerr.ErrorForCode(code), msg)
		}
	}
	if vals, _, _ := testnode.DescribeGroupConfigs(t, ctx, cl, "rc-group"); vals["share.isolation.level"] != "read_committed" {
		t.Fatalf("rc-group configs: %v", vals)
	}

	tp := testnode.Client(t, addr, kgo.TransactionalID("share-txn-a"), kgo.TransactionTimeout(100*time.Second))
	plain := testnode.Client(t, addr)
	aborted := map[int64]bool{}
	var committed []int64 // data offsets below the open transaction
	committed = append(committed, txnProduce(t, ctx, tp, topic, "c1", 10, true)...)
	for _, o := range txnProduce(t, ctx, tp, topic, "xa", 10, false) {
		aborted[o] = true
	}
	committed = append(committed, produceTagged(t, ctx, plain, topic, "p1", 5, 0)...)
	committed = append(committed, txnProduce(t, ctx, tp, topic, "c2", 10, true)...)
	for _, o := range txnProduce(t, ctx, tp, topic, "xb", 10, false) {
		aborted[o] = true
	}
	// A transaction left open, then plain records past it.
	open := testnode.Client(t, addr, kgo.TransactionalID("share-txn-open"), kgo.TransactionTimeout(100*time.Second))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	openOffs := produceTagged(t, ctx, open, topic, "o", 5, 0)
	lso := openOffs[0]
	after := produceTagged(t, ctx, plain, topic, "p2", 5, 0)

	rc, ru := newDeliveries(), newDeliveries()
	startShareMember(t, []string{addr}, "rc", "rc-group", topic, rc, false)
	startShareMember(t, []string{addr}, "ru", "ru-group", topic, ru, false)

	// Raw ShareFetch of the read_committed group rc-raw: what is acquired
	// stays below the last stable offset and leaves the aborted records
	// out.
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, td[topic].Err)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "rc-raw", "raw-member-1", 0, []string{topic}
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("ShareGroupHeartbeat: %v %+v", err, r)
	}
	raw := &shareFetcher{t: t, cl: cl, group: "rc-raw", member: "raw-member-1", topicID: td[topic].ID}
	acquired := map[int64]bool{}
	fetchUntil := func(want []int64, what string) {
		t.Helper()
		if err := proctest.Poll(60*time.Second, 10*time.Millisecond, func() bool {
			_, recs := raw.fetch(ctx)
			for _, r := range recs {
				for o := r.FirstOffset; o <= r.LastOffset; o++ {
					acquired[o] = true
					if aborted[o] {
						t.Fatalf("ShareFetch acquired offset %d of an aborted transaction (ranges %+v)", o, recs)
					}
				}
				// Accepted: the next fetch goes on past them.
				raw.acknowledge(ctx, r.FirstOffset, r.LastOffset, 1)
			}
			for _, o := range want {
				if !acquired[o] {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatalf("%s never all acquired; acquired %v", what, slices.Sorted(func(yield func(int64) bool) {
				for o := range acquired {
					if !yield(o) {
						return
					}
				}
			}))
		}
	}
	fetchUntil(committed, "the committed and plain records below the open transaction")
	for o := range acquired {
		if o >= lso {
			t.Fatalf("ShareFetch acquired offset %d at or past the last stable offset %d", o, lso)
		}
	}

	// The franz-go members: read_committed has every committed record and
	// nothing else; read_uncommitted has everything, open and aborted too.
	waitShared(t, 60*time.Second, func() bool {
		return rc.missing("c1", 10)+rc.missing("c2", 10)+rc.missing("p1", 5) == 0 &&
			ru.missing("c1", 10)+ru.missing("c2", 10)+ru.missing("p1", 5)+ru.missing("xa", 10)+ru.missing("xb", 10)+
				ru.missing("o", 5)+ru.missing("p2", 5) == 0
	}, func() string {
		return fmt.Sprintf("read_committed got %v, read_uncommitted got %v", deliveredTags(rc), deliveredTags(ru))
	})
	for tag := range deliveredTags(rc) {
		if tag != "c1" && tag != "c2" && tag != "p1" {
			t.Fatalf("read_committed group got %q records before the open transaction ended: %v", tag, deliveredTags(rc))
		}
	}

	// The open transaction commits: its records and those past it come.
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	fetchUntil(append(append([]int64(nil), openOffs...), after...), "the records of the transaction committed last and after it")
	waitShared(t, 60*time.Second, func() bool { return rc.missing("o", 5)+rc.missing("p2", 5) == 0 },
		func() string {
			g, _ := describeShare(ctx, cl, "rc-group")
			return fmt.Sprintf("after the commit, read_committed got %v; offsets %+v; group %+v", deliveredTags(rc), shareOffsets(t, cl, "rc-group", topic, 1), g)
		})
	want := map[string]int{"c1": 10, "c2": 10, "p1": 5, "o": 5, "p2": 5}
	if got := deliveredTags(rc); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed group got %v, want exactly %v", got, want)
	}

	// Everything is accepted or archived: the start offset of rc-raw
	// reaches the high watermark, past the aborted records never acquired.
	// The control markers were acquired (and accepted), as Kafka does.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	hw := end.Offset
	waitShared(t, 30*time.Second, func() bool {
		p := shareOffsets(t, cl, "rc-raw", topic, 1)
		return len(p) == 1 && p[0].StartOffset == hw
	}, func() string {
		return fmt.Sprintf("rc-raw start offset %+v, want the high watermark %d", shareOffsets(t, cl, "rc-raw", topic, 1), hw)
	})
	t.Logf("last stable offset %d while open, high watermark %d; %d aborted offsets never acquired", lso, hw, len(aborted))
}

// TestShareGroupReadCommittedTiered: a read_committed share group on a
// tiered topic whose oldest transactions, aborted ones among them, are
// only in the bucket (their segments deleted locally after upload): the
// aborted transactions of a cold read come from the remote segments'
// transaction indexes, and the group gets exactly the committed records;
// a read_uncommitted group gets every record.
func TestShareGroupReadCommittedTiered(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), fastShareGroups, testnode.WithTiering(100*time.Millisecond))
	addr := n.KafkaAddr()
	ctx := proctest.Context(t, 240*time.Second)
	cl := testnode.Client(t, addr)
	adm := kadm.NewClient(cl)
	const topic = "share-txn-tiered"
	cfg := map[string]*string{"segment.bytes": kmsg.StringPtr("16384"), "local.retention.bytes": kmsg.StringPtr("32768"),
		"remote.storage.enable": kmsg.StringPtr("true")}
	if r, err := adm.CreateTopic(ctx, 1, 1, cfg, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, "rc-tiered", false, testnode.SetConfigOp("share.isolation.level", "read_committed")); code != 0 {
		t.Fatalf("share.isolation.level=read_committed: %v %q", kerr.ErrorForCode(code), msg)
	}
	tp := testnode.Client(t, addr, kgo.TransactionalID("share-txn-tiered"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	const txns, per = 40, 20
	var lastAborted []int64 // the last offset of each aborted transaction's records
	for i := range txns {
		commit := i%2 == 0
		tag := fmt.Sprintf("a%d", i)
		if commit {
			tag = fmt.Sprintf("c%d", i)
		}
		if err := tp.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		offs := produceTagged(t, ctx, tp, topic, tag, per, 150)
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := tp.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
		if !commit {
			lastAborted = append(lastAborted, offs[len(offs)-1])
		}
	}
	var localStart int64
	proctest.Eventually(t, 90*time.Second, "aborted transactions tiered and deleted locally", func() bool {
		rep := testnode.Replica(n, topic, 0)
		if rep == nil {
			return false
		}
		localStart = rep.Log().LogStartOffset()
		return localStart > lastAborted[len(lastAborted)/2]
	})
	inBucket := 0
	for _, o := range lastAborted {
		if o < localStart {
			inBucket++
		}
	}
	rc, ru := newDeliveries(), newDeliveries()
	startShareMember(t, []string{addr}, "rc", "rc-tiered", topic, rc, false)
	startShareMember(t, []string{addr}, "ru", "ru-tiered", topic, ru, false)
	want := map[string]int{}
	all := map[string]int{}
	for i := range txns {
		if i%2 == 0 {
			want[fmt.Sprintf("c%d", i)] = per
			all[fmt.Sprintf("c%d", i)] = per
		} else {
			all[fmt.Sprintf("a%d", i)] = per
		}
	}
	waitShared(t, 90*time.Second, func() bool {
		return fmt.Sprint(deliveredTags(rc)) == fmt.Sprint(want) && fmt.Sprint(deliveredTags(ru)) == fmt.Sprint(all)
	}, func() string {
		return fmt.Sprintf("read_committed got %v, read_uncommitted got %v", deliveredTags(rc), deliveredTags(ru))
	})
	t.Logf("offsets 0-%d only in the bucket, %d of %d aborted transactions there; read_committed got %d records, read_uncommitted %d",
		localStart-1, inBucket, len(lastAborted), len(want)*per, len(all)*per)
}

// TestShareGroupReadCommittedLag: a read_committed share group's lag
// (DescribeShareGroupOffsets v1) counts to the last stable offset, not
// the high watermark: with a transaction open, the group that accepted
// every record below it has lag 0, and once the transaction commits its
// records and those after it are the lag. A read_committed group that
// starts at "latest" starts at the high watermark, as Kafka's
// SharePartition does (its offsetForLatestTimestamp reads
// READ_UNCOMMITTED whatever the group's isolation level). Before, the
// lag counted the open transaction's records and those after it (8 here).
func TestShareGroupReadCommittedLag(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), fastShareGroups)
	addr := n.KafkaAddr()
	ctx := proctest.Context(t, 120*time.Second)
	cl := testnode.Client(t, addr)
	adm := kadm.NewClient(cl)
	const topic = "share-lag"
	testnode.CreateTopic(t, adm, topic, 1)
	for _, g := range []string{"lag-rc", "lag-rc-latest"} {
		ops := []kmsg.IncrementalAlterConfigsRequestResourceConfig{testnode.SetConfigOp("share.isolation.level", "read_committed")}
		if g == "lag-rc-latest" {
			ops = append(ops, testnode.SetConfigOp("share.auto.offset.reset", "latest"))
		}
		if code, msg := testnode.AlterGroupConfigs(t, ctx, cl, g, false, ops...); code != 0 {
			t.Fatalf("group configs of %s: %v %q", g, kerr.ErrorForCode(code), msg)
		}
	}
	endOffset := func() int64 {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := ends.Lookup(topic, 0)
		return e.Offset
	}

	plain := testnode.Client(t, addr)
	produceTagged(t, ctx, plain, topic, "p", 5, 0)
	open := testnode.Client(t, addr, kgo.TransactionalID("share-lag-open"), kgo.TransactionTimeout(100*time.Second))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	lso := produceTagged(t, ctx, open, topic, "o", 5, 0)[0]
	produceTagged(t, ctx, plain, topic, "q", 3, 0)
	hw := endOffset()

	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, td[topic].Err)
	}
	join := func(group, member string) *shareFetcher {
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, member, 0, []string{topic}
		if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
			t.Fatalf("ShareGroupHeartbeat of %s: %v %+v", group, err, r)
		}
		return &shareFetcher{t: t, cl: cl, group: group, member: member, topicID: td[topic].ID}
	}
	// lag-rc accepts everything it gets: the records below the open
	// transaction.
	raw := join("lag-rc", "lag-member-1")
	acquired := 0
	if err := proctest.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		_, recs := raw.fetch(ctx)
		for _, r := range recs {
			if r.LastOffset >= lso {
				t.Fatalf("read_committed ShareFetch acquired %d-%d, at or past the last stable offset %d", r.FirstOffset, r.LastOffset, lso)
			}
			acquired += int(r.LastOffset - r.FirstOffset + 1)
			raw.acknowledge(ctx, r.FirstOffset, r.LastOffset, 1)
		}
		return acquired == int(lso)
	}); err != nil {
		t.Fatalf("acquired %d of the %d records below the open transaction", acquired, lso)
	}
	if p := shareOffsets(t, cl, "lag-rc", topic, 1); len(p) != 1 || p[0].StartOffset != lso || p[0].Lag != 0 {
		t.Fatalf("lag-rc with the transaction open: %+v, want start offset %d (the LSO) and lag 0 (high watermark %d)", p, lso, hw)
	}

	raw2 := join("lag-rc-latest", "lag-member-2")
	if _, recs := raw2.fetch(ctx); len(recs) != 0 {
		t.Fatalf("lag-rc-latest acquired %+v at its start", recs)
	}
	if p := shareOffsets(t, cl, "lag-rc-latest", topic, 1); len(p) != 1 || p[0].StartOffset != hw || p[0].Lag != 0 {
		t.Fatalf("lag-rc-latest: %+v, want start offset %d (the high watermark, as Kafka) and lag 0", p, hw)
	}

	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	var p []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition
	if err := proctest.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		hw = endOffset()
		p = shareOffsets(t, cl, "lag-rc", topic, 1)
		return len(p) == 1 && p[0].Lag == hw-lso
	}); err != nil {
		t.Fatalf("lag-rc after the commit: %+v, want lag %d (offsets %d up to the high watermark %d)", p, hw-lso, lso, hw)
	}
}
