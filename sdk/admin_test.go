package sdk_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shale-io/shale/sdk"
)

// TestAdminTopics: create, list, describe, configs, delete, with the SDK's
// errors for a duplicate and a missing topic.
func TestAdminTopics(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, a, "admin-t", 4, map[string]string{"retention.ms": "3600000"})
	if err := a.CreateTopic(ctx, "admin-t", 1, 1, nil); !errors.Is(err, sdk.ErrTopicExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	names, err := a.ListTopics(ctx)
	if err != nil || !slices.Contains(names, "admin-t") || slices.Contains(names, "__consumer_offsets") {
		t.Fatalf("topics %v (%v)", names, err)
	}
	info, err := a.DescribeTopic(ctx, "admin-t")
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Partitions) != 4 || info.ID == "" {
		t.Fatalf("described %+v", info)
	}
	for i, p := range info.Partitions {
		if p.Partition != int32(i) || len(p.Replicas) != 1 || p.Leader != p.Replicas[0] || len(p.ISR) != 1 {
			t.Fatalf("partition %+v", p)
		}
	}
	cfg, err := a.TopicConfig(ctx, "admin-t")
	if err != nil || cfg["retention.ms"] != "3600000" {
		t.Fatalf("configs %v (%v)", cfg["retention.ms"], err)
	}
	if err := a.AlterTopicConfig(ctx, "admin-t", map[string]string{"retention.ms": "7200000", "segment.bytes": "1048576"}); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := a.TopicConfig(ctx, "admin-t"); cfg["retention.ms"] != "7200000" || cfg["segment.bytes"] != "1048576" {
		t.Fatalf("after alter: retention.ms %s segment.bytes %s", cfg["retention.ms"], cfg["segment.bytes"])
	}
	if err := a.AlterTopicConfig(ctx, "admin-t", nil, "retention.ms"); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := a.TopicConfig(ctx, "admin-t"); cfg["retention.ms"] != "604800000" || cfg["segment.bytes"] != "1048576" {
		t.Fatalf("after unset: retention.ms %s segment.bytes %s", cfg["retention.ms"], cfg["segment.bytes"])
	}
	if err := a.AlterTopicConfig(ctx, "admin-t", map[string]string{"retention.ms": "soon"}); err == nil {
		t.Fatal("a bad config value was accepted")
	}
	if err := a.DeleteTopic(ctx, "admin-t"); err != nil {
		t.Fatal(err)
	}
	// Deletion completes through the control plane: poll until it shows.
	for {
		_, err := a.DescribeTopic(ctx, "admin-t")
		if errors.Is(err, sdk.ErrTopicNotFound) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("describe after delete: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := a.DeleteTopic(ctx, "admin-t"); !errors.Is(err, sdk.ErrTopicNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// TestTierStatus reads a node's tier status and checks its errors.
func TestTierStatus(t *testing.T) {
	a := newAdmin(t)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, a, "tiered", 2, nil)
	st, err := a.TierStatus(ctx, "tiered")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Partitions) != 2 || st.Partitions[0].Topic != "tiered" || st.Partitions[1].Partition != 1 || st.Partitions[0].HighWatermark != 0 {
		t.Fatalf("status %+v", st)
	}
	noURL, err := sdk.NewAdmin(sdk.WithSeeds(seed))
	if err != nil {
		t.Fatal(err)
	}
	defer noURL.Close()
	if _, err := noURL.TierStatus(ctx, ""); !errors.Is(err, sdk.ErrNoAdminURL) {
		t.Fatalf("no admin URL: %v", err)
	}
	bad, err := sdk.NewAdmin(sdk.WithSeeds(seed), sdk.WithAdminURL(adminURL+"/nowhere"))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.TierStatus(ctx, ""); !errors.Is(err, sdk.ErrAdminHTTP) {
		t.Fatalf("wrong path: %v", err)
	}
	a.Close()
	if _, err := a.TierStatus(ctx, ""); !errors.Is(err, sdk.ErrClosed) {
		t.Fatalf("closed admin: %v", err)
	}
}

// TestOptionErrors: constructors refuse bad options.
func TestOptionErrors(t *testing.T) {
	for name, opts := range map[string][]sdk.Option{
		"no seeds":        nil,
		"acks with idem":  {sdk.WithSeeds(seed), sdk.WithAcks(sdk.AcksLeader)},
		"bad codec":       {sdk.WithSeeds(seed), sdk.WithCompression("brotli")},
		"negative linger": {sdk.WithSeeds(seed), sdk.WithLinger(-time.Second)},
		"zero buffer":     {sdk.WithSeeds(seed), sdk.WithBufferMemory(0)},
		"group no topics": {sdk.WithSeeds(seed), sdk.WithGroup("g")},
	} {
		var err error
		if name == "group no topics" {
			_, err = sdk.NewConsumer(opts...)
		} else {
			_, err = sdk.NewProducer(opts...)
		}
		if !errors.Is(err, sdk.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	p, err := sdk.NewProducer(sdk.WithSeeds(seed), sdk.WithAcks(sdk.AcksLeader), sdk.WithIdempotence(false))
	if err != nil {
		t.Fatal(err)
	}
	p.Close(t.Context())
	if err := p.SendSync(t.Context(), &sdk.Record{Topic: "x"}); !errors.Is(err, sdk.ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}
