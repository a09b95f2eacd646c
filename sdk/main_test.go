package sdk_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/sdk"
)

// seed and adminURL point the tests and the examples at the node that
// TestMain starts: one real Shale node with the filesystem cold tier.
var (
	seed     string
	adminURL string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "shale-sdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cfg := testnode.Config(dir)
	cfg.TieringInterval = 200 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	n, err := broker.Start(ctx, cfg, testnode.Logger())
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "start node:", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Close(ctx)
	}()
	seed, adminURL = n.KafkaAddr(), "http://"+n.AdminAddr()
	return m.Run()
}

// ctxT is a context bounded by d and by the test.
func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func newAdmin(t *testing.T) *sdk.Admin {
	t.Helper()
	a, err := sdk.NewAdmin(sdk.WithSeeds(seed), sdk.WithAdminURL(adminURL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func newProducer(t *testing.T, opts ...sdk.Option) *sdk.Producer {
	t.Helper()
	p, err := sdk.NewProducer(append([]sdk.Option{sdk.WithSeeds(seed), sdk.WithDeliveryTimeout(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Close(ctx)
	})
	return p
}

func newConsumer(t *testing.T, opts ...sdk.Option) *sdk.Consumer {
	t.Helper()
	c, err := sdk.NewConsumer(append([]sdk.Option{sdk.WithSeeds(seed)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func createTopic(t *testing.T, a *sdk.Admin, name string, partitions int32, configs map[string]string) {
	t.Helper()
	if err := a.CreateTopic(ctxT(t, 30*time.Second), name, partitions, 1, configs); err != nil {
		t.Fatal(err)
	}
}

// pollN polls c until it has n records or ctx ends.
func pollN(ctx context.Context, t *testing.T, c *sdk.Consumer, n int) []*sdk.Record {
	t.Helper()
	var out []*sdk.Record
	for len(out) < n {
		rs, err := c.Poll(ctx)
		out = append(out, rs...)
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
	}
	return out
}
