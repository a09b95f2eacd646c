package sdk_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shale-io/shale/sdk"
)

// seed (host:port of a Shale node) and adminURL (its admin HTTP address)
// are set by TestMain, which starts a real node for these examples.

func ExampleProducer() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := sdk.NewAdmin(sdk.WithSeeds(seed))
	if err != nil {
		panic(err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(ctx, "ex-orders", 6, 1, nil); err != nil {
		panic(err)
	}

	p, err := sdk.NewProducer(sdk.WithSeeds(seed), sdk.WithLinger(10*time.Millisecond), sdk.WithCompression(sdk.CompressionZstd))
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)

	// Asynchronous: the callback gets the outcome.
	acked := make(chan error, 1)
	p.Send(ctx, &sdk.Record{Topic: "ex-orders", Key: []byte("customer-42"), Value: []byte("created")},
		func(r *sdk.Record, err error) { acked <- err })
	fmt.Println("async:", <-acked)

	// Synchronous: keys land where the Java client would put them.
	r := &sdk.Record{Topic: "ex-orders", Key: []byte("customer-42"), Value: []byte("paid")}
	if err := p.SendSync(ctx, r); err != nil {
		panic(err)
	}
	fmt.Println("partition:", r.Partition, "same as Java:", int(r.Partition) == sdk.KeyPartition([]byte("customer-42"), 6), "offset:", r.Offset)
	// Output:
	// async: <nil>
	// partition: 3 same as Java: true offset: 1
}

func ExampleConsumer() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := sdk.NewProducer(sdk.WithSeeds(seed))
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)
	admin, _ := sdk.NewAdmin(sdk.WithSeeds(seed))
	defer admin.Close()
	admin.CreateTopic(ctx, "ex-events", 1, 1, nil)
	for _, v := range []string{"a", "b", "c"} {
		if err := p.SendSync(ctx, &sdk.Record{Topic: "ex-events", Value: []byte(v)}); err != nil {
			panic(err)
		}
	}

	// A group member that commits after processing.
	c, err := sdk.NewConsumer(sdk.WithSeeds(seed), sdk.WithGroup("ex-readers", "ex-events"), sdk.WithAutoCommit(false))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	for seen := 0; seen < 3; {
		records, err := c.Poll(ctx)
		if err != nil {
			panic(err)
		}
		for _, r := range records {
			fmt.Printf("%d: %s\n", r.Offset, r.Value)
		}
		seen += len(records)
		if err := c.Commit(ctx, records...); err != nil {
			panic(err)
		}
	}
	offsets, _ := admin.CommittedOffsets(ctx, "ex-readers")
	fmt.Println("committed:", offsets["ex-events"][0])
	// Output:
	// 0: a
	// 1: b
	// 2: c
	// committed: 3
}

func ExampleConsumer_Seek() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, _ := sdk.NewAdmin(sdk.WithSeeds(seed))
	defer admin.Close()
	// Historical timestamps: keep them forever, past the 7-day default.
	admin.CreateTopic(ctx, "ex-prices", 1, 1, map[string]string{"retention.ms": "-1"})
	p, _ := sdk.NewProducer(sdk.WithSeeds(seed))
	defer p.Close(ctx)
	noon := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for h := range 4 {
		p.SendSync(ctx, &sdk.Record{Topic: "ex-prices", Value: fmt.Appendf(nil, "price at %02d:00", 12+h),
			Timestamp: noon.Add(time.Duration(h) * time.Hour)})
	}

	c, _ := sdk.NewConsumer(sdk.WithSeeds(seed), sdk.WithAssignment(map[string]map[int32]sdk.Position{"ex-prices": {0: sdk.Start()}}))
	defer c.Close()
	first, _ := c.Poll(ctx)
	fmt.Printf("%d: %s\n", first[0].Offset, first[0].Value)
	if err := c.Seek(ctx, "ex-prices", 0, sdk.AtTime(noon.Add(90*time.Minute))); err != nil {
		panic(err)
	}
	records, _ := c.Poll(ctx)
	fmt.Printf("%d: %s\n", records[0].Offset, records[0].Value)
	// Output:
	// 0: price at 12:00
	// 2: price at 14:00
}

func ExampleConsumer_Replay() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := sdk.NewAdmin(sdk.WithSeeds(seed), sdk.WithAdminURL(adminURL))
	if err != nil {
		panic(err)
	}
	defer admin.Close()
	// 100 records in small segments that leave the local disk once tiered.
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := coldTopic(ctx, admin, "ex-audit", 1, 100, base, 20); err != nil {
		panic(err)
	}
	st, _ := admin.TierStatus(ctx, "ex-audit")
	fmt.Println("offsets 10..14 only in the bucket:", st.Partitions[0].LocalLogStartOffset > 14)

	c, err := sdk.NewConsumer(sdk.WithSeeds(seed), sdk.WithTopics("ex-audit"))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// By offset: [10, 15).
	err = c.Replay(ctx, "ex-audit", sdk.AtOffset(10), sdk.AtOffset(15), func(r *sdk.Record) error {
		fmt.Printf("%d %s\n", r.Offset, r.Value)
		return nil
	})
	if err != nil {
		panic(err)
	}
	// By time, as an iterator: the records of seconds [3, 5).
	for r, err := range c.ReplayRecords(ctx, "ex-audit", sdk.AtTime(base.Add(3*time.Second)), sdk.AtTime(base.Add(5*time.Second))) {
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Timestamp.UTC().Format(time.TimeOnly), string(r.Value))
	}
	// Output:
	// offsets 10..14 only in the bucket: true
	// 10 v010
	// 11 v011
	// 12 v012
	// 13 v013
	// 14 v014
	// 00:00:03 v003
	// 00:00:04 v004
}

func ExampleAdmin_ResetGroupOffsets() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, _ := sdk.NewAdmin(sdk.WithSeeds(seed))
	defer admin.Close()
	admin.CreateTopic(ctx, "ex-jobs", 2, 1, map[string]string{"retention.ms": "86400000"})
	p, _ := sdk.NewProducer(sdk.WithSeeds(seed))
	defer p.Close(ctx)
	for i := range 10 {
		p.SendSync(ctx, &sdk.Record{Topic: "ex-jobs", Key: fmt.Appendf(nil, "job-%d", i)})
	}
	// Skip the backlog: the group "ex-workers" starts at the end.
	offs, err := admin.ResetGroupOffsets(ctx, "ex-workers", "ex-jobs", sdk.End())
	if err != nil {
		panic(err)
	}
	fmt.Println("partition 0:", offs[0], "partition 1:", offs[1], "total:", offs[0]+offs[1])
	cfg, _ := admin.TopicConfig(ctx, "ex-jobs")
	fmt.Println("retention.ms:", cfg["retention.ms"])
	// Output:
	// partition 0: 4 partition 1: 6 total: 10
	// retention.ms: 86400000
}

func ExampleAdmin_PlanOffsetReset() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, _ := sdk.NewAdmin(sdk.WithSeeds(seed))
	defer admin.Close()
	admin.CreateTopic(ctx, "ex-moves", 1, 1, nil)
	p, _ := sdk.NewProducer(sdk.WithSeeds(seed))
	defer p.Close(ctx)
	for i := range 5 {
		p.SendSync(ctx, &sdk.Record{Topic: "ex-moves", Value: fmt.Appendf(nil, "event %d", i)})
	}
	// "-2" as an operator would type it: the last two records.
	pos, err := sdk.ParsePosition("-2")
	if err != nil {
		panic(err)
	}
	plan, err := admin.PlanOffsetReset(ctx, "ex-movers", pos, []string{"ex-moves"})
	if err != nil {
		panic(err)
	}
	for _, m := range plan { // a dry run: nothing is committed yet
		fmt.Printf("%s/%d: %d -> %d, lag %d\n", m.Topic, m.Partition, m.Old, m.New, m.Lag)
	}
	if err := admin.CommitOffsetReset(ctx, "ex-movers", plan); err != nil {
		panic(err)
	}
	committed, _ := admin.CommittedOffsets(ctx, "ex-movers")
	fmt.Println("committed:", committed["ex-moves"][0])
	// Output:
	// ex-moves/0: -1 -> 3, lag 2
	// committed: 3
}
