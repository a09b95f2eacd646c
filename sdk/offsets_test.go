package sdk_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/sdk"
)

func TestParsePosition(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]sdk.Position{
		"start": sdk.Start(), "earliest": sdk.Start(), "beginning": sdk.Start(), "OLDEST": sdk.Start(),
		"end": sdk.End(), "latest": sdk.End(), "newest": sdk.End(),
		"42": sdk.AtOffset(42), "0": sdk.AtOffset(0),
		"-10": sdk.FromEnd(10), "-0": sdk.FromEnd(0),
		"@1700000000000":        sdk.AtTime(time.UnixMilli(1700000000000)),
		"@2026-01-02T03:04:05Z": sdk.AtTime(ts),
	} {
		got, err := sdk.ParsePosition(in)
		if err != nil || got.Kind() != want.Kind() || got.Offset() != want.Offset() || !got.Time().Equal(want.Time()) {
			t.Errorf("ParsePosition(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "soon", "@yesterday", "1.5", "--3"} {
		if _, err := sdk.ParsePosition(bad); !errors.Is(err, sdk.ErrInvalidPosition) {
			t.Errorf("ParsePosition(%q) error %v, want ErrInvalidPosition", bad, err)
		}
	}
	if sdk.FromEnd(3).String() != "3 before the end" || sdk.FromEnd(-3) != sdk.FromEnd(3) {
		t.Fatalf("FromEnd: %v", sdk.FromEnd(-3))
	}
}

// manualPartitioner makes the producer write each record to its
// Partition.
func manualPartitioner() kgo.Opt { return kgo.RecordPartitioner(kgo.ManualPartitioner()) }

// produceAt writes n records to topic/partition and returns the time just
// before the first one.
func produceAt(t *testing.T, p *sdk.Producer, topic string, partition int32, n int) time.Time {
	t.Helper()
	at := time.Now()
	for i := range n {
		r := &sdk.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "v%d", i)}
		if err := p.SendSync(ctxT(t, 30*time.Second), r); err != nil {
			t.Fatal(err)
		}
	}
	return at
}

// TestResolveOffsets resolves every kind of position on a real node,
// clamped into each partition's [start, end], on all partitions or the
// named ones.
func TestResolveOffsets(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, a, "resolve", 2, nil)
	p := newProducer(t, sdk.WithKgoOptions(manualPartitioner()))
	produceAt(t, p, "resolve", 0, 5)
	produceAt(t, p, "resolve", 1, 1)
	// Wait (at most a millisecond) for the next millisecond, so that the
	// later records' timestamps and late are after the first one's.
	for sent := time.Now().UnixMilli(); time.Now().UnixMilli() <= sent; {
		runtime.Gosched()
	}
	late := produceAt(t, p, "resolve", 1, 2)

	ranges, err := a.PartitionOffsets(ctx, "resolve")
	if err != nil || len(ranges) != 2 || ranges[0] != (sdk.OffsetRange{Start: 0, End: 5}) || ranges[1] != (sdk.OffsetRange{Start: 0, End: 3}) {
		t.Fatalf("ranges %v (%v)", ranges, err)
	}
	for _, c := range []struct {
		pos    sdk.Position
		p0, p1 int64
	}{
		{sdk.Start(), 0, 0},
		{sdk.End(), 5, 3},
		{sdk.AtOffset(2), 2, 2},
		{sdk.AtOffset(4), 4, 3},
		{sdk.AtOffset(100), 5, 3},
		{sdk.FromEnd(2), 3, 1},
		{sdk.FromEnd(4), 1, 0},
		{sdk.FromEnd(0), 5, 3},
		{sdk.AtTime(late), 5, 1},
		{sdk.AtTime(time.Now().Add(time.Hour)), 5, 3},
		{sdk.AtTime(time.UnixMilli(0)), 0, 0},
	} {
		got, err := a.ResolveOffsets(ctx, "resolve", c.pos)
		if err != nil || len(got) != 2 || got[0] != c.p0 || got[1] != c.p1 {
			t.Errorf("%v: %v (%v), want [%d %d]", c.pos, got, err, c.p0, c.p1)
		}
	}
	if got, err := a.ResolveOffsets(ctx, "resolve", sdk.FromEnd(1), 1); err != nil || len(got) != 1 || got[1] != 2 {
		t.Fatalf("partition 1 only: %v (%v)", got, err)
	}
	if _, err := a.ResolveOffsets(ctx, "resolve", sdk.Start(), 0, 7); !errors.Is(err, sdk.ErrPartitionNotFound) {
		t.Fatalf("partition 7: %v", err)
	}
	if _, err := a.PartitionOffsets(ctx, "no-such-topic"); !errors.Is(err, sdk.ErrTopicNotFound) {
		t.Fatalf("unknown topic: %v", err)
	}
}

// TestOffsetResetAndLag plans, commits and reads back a group's offsets:
// a plan commits nothing, the commit moves them, the lag follows, and a
// group with a live member is refused.
func TestOffsetResetAndLag(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 90*time.Second)
	createTopic(t, a, "reset-a", 2, nil)
	createTopic(t, a, "reset-b", 1, nil)
	p := newProducer(t, sdk.WithKgoOptions(manualPartitioner()))
	produceAt(t, p, "reset-a", 0, 4)
	produceAt(t, p, "reset-a", 1, 2)
	produceAt(t, p, "reset-b", 0, 3)

	if _, _, err := a.DescribeGroupLag(ctx, "reset-g"); !errors.Is(err, sdk.ErrGroupNotFound) {
		t.Fatalf("lag of an unknown group: %v", err)
	}
	plan, err := a.PlanOffsetReset(ctx, "reset-g", sdk.FromEnd(1), []string{"reset-b", "reset-a"})
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.OffsetReset{
		{Topic: "reset-a", Partition: 0, Old: -1, New: 3, End: 4, Lag: 1},
		{Topic: "reset-a", Partition: 1, Old: -1, New: 1, End: 2, Lag: 1},
		{Topic: "reset-b", Partition: 0, Old: -1, New: 2, End: 3, Lag: 1},
	}
	if fmt.Sprint(plan) != fmt.Sprint(want) {
		t.Fatalf("plan\n%v\nwant\n%v", plan, want)
	}
	if c, err := a.CommittedOffsets(ctx, "reset-g"); err != nil || len(c) != 0 {
		t.Fatalf("a plan committed %v (%v)", c, err)
	}
	if err := a.CommitOffsetReset(ctx, "reset-g", plan); err != nil {
		t.Fatal(err)
	}
	info, lags, err := a.DescribeGroupLag(ctx, "reset-g")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != "Empty" || len(info.Members) != 0 || len(lags) != 3 {
		t.Fatalf("group %+v lags %+v", info, lags)
	}
	for i, l := range lags {
		if l.Topic != want[i].Topic || l.Partition != want[i].Partition || l.Committed != want[i].New || l.End != want[i].End || l.Lag != 1 || l.Err != nil {
			t.Errorf("lag %+v, want committed %d end %d lag 1", l, want[i].New, want[i].End)
		}
	}

	// One partition, back to the start: Old is what was committed.
	plan, err = a.PlanOffsetReset(ctx, "reset-g", sdk.Start(), []string{"reset-a"}, 1)
	if err != nil || len(plan) != 1 || plan[0] != (sdk.OffsetReset{Topic: "reset-a", Partition: 1, Old: 1, New: 0, End: 2, Lag: 2}) {
		t.Fatalf("plan for reset-a/1: %+v (%v)", plan, err)
	}
	if _, err := a.PlanOffsetReset(ctx, "reset-g", sdk.Start(), []string{"reset-b"}, 1); !errors.Is(err, sdk.ErrPartitionNotFound) {
		t.Fatalf("reset-b/1: %v", err)
	}

	// A live member: no reset.
	c := newConsumer(t, sdk.WithGroup("reset-g", "reset-b"))
	pollN(ctx, t, c, 1)
	if err := a.CommitOffsetReset(ctx, "reset-g", plan); !errors.Is(err, sdk.ErrGroupNotEmpty) {
		t.Fatalf("commit with a member: %v", err)
	}
	info, lags, err = a.DescribeGroupLag(ctx, "reset-g")
	if err != nil || len(info.Members) != 1 || info.ProtocolType != "consumer" {
		t.Fatalf("with a member: %+v (%v)", info, err)
	}
	assigned := false
	for _, l := range lags {
		assigned = assigned || (l.Topic == "reset-b" && l.MemberID == info.Members[0].MemberID)
	}
	if !assigned {
		t.Fatalf("reset-b not assigned to the member: %+v", lags)
	}
}

// TestDescribeCluster: the node, the controller and the topics as the
// node's Metadata answer has them; a named topic that does not exist is
// left out.
func TestDescribeCluster(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, a, "cluster-t", 3, nil)
	info, err := a.DescribeCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Brokers) != 1 || info.Controller != info.Brokers[0].NodeID || info.ClusterID == "" ||
		info.Brokers[0].Host != "127.0.0.1" || info.Brokers[0].Port <= 0 {
		t.Fatalf("cluster %+v", info)
	}
	found := false
	for _, ti := range info.Topics {
		if ti.Name == "cluster-t" {
			found = true
			if len(ti.Partitions) != 3 || ti.ReplicationFactor() != 1 || ti.Partitions[2].Leader != info.Brokers[0].NodeID || ti.Partitions[2].Err != nil {
				t.Fatalf("topic %+v", ti)
			}
		}
	}
	if !found {
		t.Fatalf("cluster-t not in %+v", info.Topics)
	}
	one, err := a.DescribeCluster(ctx, "cluster-t", "no-such-topic")
	if err != nil || len(one.Topics) != 1 || one.Topics[0].Name != "cluster-t" {
		t.Fatalf("named topics: %+v (%v)", one.Topics, err)
	}
}
