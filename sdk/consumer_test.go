package sdk_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shale-io/shale/sdk"
)

// produceN writes n records to topic, value "v<i>", with timestamps
// base + i seconds, partition by key "k<i%keys>".
func produceN(t *testing.T, topic string, n, keys int, base time.Time) {
	t.Helper()
	p := newProducer(t, sdk.WithDeliveryTimeout(0)) // timestamps are in the past
	var rs []*sdk.Record
	for i := range n {
		rs = append(rs, &sdk.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%keys), Value: fmt.Appendf(nil, "v%d", i),
			Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	if err := p.SendSync(ctxT(t, 30*time.Second), rs...); err != nil {
		t.Fatal(err)
	}
}

// TestGroupManualCommit: a member reads part of a topic and commits what
// it processed; a second member of the group, after the first closed,
// resumes right after the commit; admin sees the offsets, the lag, the
// members, and resets the group.
func TestGroupManualCommit(t *testing.T) {
	a := newAdmin(t)
	createTopic(t, a, "orders", 3, nil)
	produceN(t, "orders", 90, 9, time.Now().Add(-time.Hour))
	ctx := ctxT(t, 60*time.Second)

	c1, err := sdk.NewConsumer(sdk.WithSeeds(seed), sdk.WithGroup("billing", "orders"), sdk.WithAutoCommit(false))
	if err != nil {
		t.Fatal(err)
	}
	// Process (and commit) only the first half of what the first poll gave.
	got := pollN(ctx, t, c1, 2)
	got = got[:len(got)/2]
	if err := c1.Commit(ctx, got...); err != nil {
		t.Fatal(err)
	}
	if as := c1.Assigned(); len(as["orders"]) != 3 {
		t.Fatalf("assigned %v, want the 3 partitions", as)
	}
	info, err := a.DescribeGroup(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if info.State != "Stable" || len(info.Members) != 1 || len(info.Members[0].Assigned["orders"]) != 3 {
		t.Fatalf("group %+v", info)
	}
	if _, err := a.ResetGroupOffsets(ctx, "billing", "orders", sdk.Start()); !errors.Is(err, sdk.ErrGroupNotEmpty) {
		t.Fatalf("reset of a live group: %v, want ErrGroupNotEmpty", err)
	}
	committed := map[int32]int64{}
	for _, r := range got {
		committed[r.Partition] = max(committed[r.Partition], r.Offset+1)
	}
	c1.Close()

	offs, err := a.CommittedOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for p, o := range committed {
		if offs["orders"][p] != o {
			t.Fatalf("committed %v, want %v", offs["orders"], committed)
		}
	}
	// The second member starts after the commit: it reads exactly the rest.
	var done int64
	for _, o := range committed {
		done += o
	}
	c2 := newConsumer(t, sdk.WithGroup("billing", "orders"), sdk.WithAutoCommit(false))
	rest := pollN(ctx, t, c2, int(90-done))
	seen := map[string]bool{}
	for _, r := range rest {
		if seen[string(r.Value)] {
			t.Fatalf("%s read twice", r.Value)
		}
		seen[string(r.Value)] = true
		if r.Offset < committed[r.Partition] {
			t.Fatalf("second member read %s[%d]@%d below the commit %d", r.Topic, r.Partition, r.Offset, committed[r.Partition])
		}
	}
	if len(rest) != int(90-done) || done == 0 {
		t.Fatalf("second member read %d records, committed %d of 90", len(rest), done)
	}
	if err := c2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	lag, err := a.GroupLag(ctx, "billing", "orders")
	if err != nil {
		t.Fatal(err)
	}
	for p, l := range lag {
		if l.Lag != 0 || l.Committed != l.End {
			t.Fatalf("partition %d lag %+v after committing everything", p, l)
		}
	}
	// Reset to the start (group now empty), then delete.
	reset, err := a.ResetGroupOffsets(ctx, "billing", "orders", sdk.Start())
	if err != nil {
		t.Fatal(err)
	}
	if lag, _ := a.GroupLag(ctx, "billing", "orders"); lag[0].Committed != 0 || reset[0] != 0 {
		t.Fatalf("after reset: lag %+v, reset %v", lag, reset)
	}
	groups, err := a.ListGroups(ctx)
	if err != nil || !containsStr(groups, "billing") {
		t.Fatalf("groups %v (%v)", groups, err)
	}
	if err := a.DeleteGroup(ctx, "billing"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DescribeGroup(ctx, "billing"); !errors.Is(err, sdk.ErrGroupNotFound) {
		t.Fatalf("describe of a deleted group: %v", err)
	}
}

// TestGroupAutoCommit: records polled by an auto-committing member are
// committed when it closes.
func TestGroupAutoCommit(t *testing.T) {
	a := newAdmin(t)
	createTopic(t, a, "clicks", 2, nil)
	produceN(t, "clicks", 40, 4, time.Now().Add(-time.Hour))
	ctx := ctxT(t, 60*time.Second)
	c, err := sdk.NewConsumer(sdk.WithSeeds(seed), sdk.WithGroup("stats", "clicks"))
	if err != nil {
		t.Fatal(err)
	}
	pollN(ctx, t, c, 40)
	c.Close()
	if _, err := c.Poll(ctx); !errors.Is(err, sdk.ErrClosed) {
		t.Fatalf("poll after close: %v", err)
	}
	lag, err := a.GroupLag(ctx, "stats", "clicks")
	if err != nil {
		t.Fatal(err)
	}
	for p, l := range lag {
		if l.Lag != 0 {
			t.Fatalf("partition %d lag %+v after an auto-commit on close", p, l)
		}
	}
}

// TestSeek moves a manual consumer by timestamp and by offset.
func TestSeek(t *testing.T) {
	a := newAdmin(t)
	createTopic(t, a, "ticks", 1, map[string]string{"segment.bytes": "2048"})
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond)
	produceN(t, "ticks", 100, 1, base)
	ctx := ctxT(t, 60*time.Second)
	c := newConsumer(t, sdk.WithAssignment(map[string]map[int32]sdk.Position{"ticks": {0: sdk.AtTime(base.Add(30*time.Second + time.Millisecond))}}))
	if r := pollN(ctx, t, c, 1)[0]; r.Offset != 31 || !r.Timestamp.Equal(base.Add(31*time.Second)) {
		t.Fatalf("AtTime start: offset %d at %v", r.Offset, r.Timestamp)
	}
	for _, s := range []struct {
		pos  sdk.Position
		want int64
	}{
		{sdk.AtTime(base.Add(70 * time.Second)), 70},
		{sdk.AtOffset(5), 5},
		{sdk.Start(), 0},
		{sdk.AtTime(base.Add(-time.Hour)), 0},
		{sdk.AtOffset(-7), 0},
	} {
		if err := c.Seek(ctx, "ticks", 0, s.pos); err != nil {
			t.Fatal(err)
		}
		if r := pollN(ctx, t, c, 1)[0]; r.Offset != s.want {
			t.Fatalf("seek to %v: first record at %d, want %d", s.pos, r.Offset, s.want)
		}
	}
	if err := c.Seek(ctx, "no-such-topic", 0, sdk.Start()); !errors.Is(err, sdk.ErrTopicNotFound) {
		t.Fatalf("seek on a missing topic: %v", err)
	}
	if err := c.Commit(ctx); !errors.Is(err, sdk.ErrNoGroup) {
		t.Fatalf("commit without a group: %v", err)
	}
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
