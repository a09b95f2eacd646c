package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/shale-io/shale/infra/natsembed"
)

// TestStoreSurvivesNATSNodeLoss runs two Stores against a 3-node NATS
// cluster with R3 buckets, shuts down the NATS node the first Store is
// connected to, and checks that both keep writing and keep seeing each
// other's writes.
func TestStoreSurvivesNATSNodeLoss(t *testing.T) {
	servers, err := natsembed.StartCluster(3, t.TempDir(), natsembed.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Cleanup(s.Shutdown)
	}
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.ClientURL()
	}
	dial := func(first int) *nats.Conn {
		// List the preferred server first; the others are failover targets.
		order := append([]string{urls[first]}, append(append([]string{}, urls[:first]...), urls[first+1:]...)...)
		nc, err := nats.Connect(strings.Join(order, ","), nats.DontRandomize(),
			nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	cfg := StoreConfig{Replicas: 3}
	ncA, ncB := dial(0), dial(1)
	a := openStore(t, ncA, cfg)
	b := openStore(t, ncB, cfg)
	ctx := testCtx(t)
	if err := a.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.RegisterBroker(ctx, broker(2)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "brokers visible", func() bool { return len(a.Brokers()) == 2 && len(b.Brokers()) == 2 })
	for _, kv := range []jetstream.KeyValue{a.brokersKV, a.topicsKV, a.partsKV} {
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas; r != 3 {
			t.Fatalf("bucket %s has %d replicas, want 3", kv.Bucket(), r)
		}
	}
	if _, err := a.CreateTopic(ctx, "before", 2, 2, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "b sees 'before'", func() bool { return len(b.Partitions("before")) == 2 })

	// Kill a's server.
	if ncA.ConnectedUrl() != urls[0] {
		t.Fatalf("a is connected to %s, want %s", ncA.ConnectedUrl(), urls[0])
	}
	servers[0].Shutdown()
	killed := time.Now()

	// Writes from both stores succeed once the cluster has re-elected
	// stream leaders and a has reconnected; retry transient errors.
	retry := func(what string, op func(context.Context) error) {
		t.Helper()
		var err error
		eventually(t, 45*time.Second, what, func() bool {
			opCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err = op(opCtx); err != nil {
				t.Logf("%s: %v (retrying)", what, err)
			}
			return err == nil
		})
	}
	createOnce := func(s *Store, name string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := s.CreateTopic(ctx, name, 2, 2, nil)
			if errors.Is(err, ErrTopicExists) {
				return nil // an earlier attempt landed but its reply was lost
			}
			return err
		}
	}
	retry("a creates 'after-a'", createOnce(a, "after-a"))
	t.Logf("a wrote %v after the kill", time.Since(killed))
	retry("b creates 'after-b'", createOnce(b, "after-b"))
	t.Logf("b wrote %v after the kill", time.Since(killed))
	eventually(t, 30*time.Second, "b sees a's new topic", func() bool { return len(b.Partitions("after-a")) == 2 })
	t.Logf("b caught up %v after the kill", time.Since(killed))
	eventually(t, 30*time.Second, "a sees b's new topic", func() bool { return len(a.Partitions("after-b")) == 2 })

	t.Logf("watchers caught up %v after the kill", time.Since(killed))

	// Compare-and-set keeps working, and the change propagates.
	retry("b updates a partition", func(ctx context.Context) error {
		p, _ := b.Partition("before", 0)
		p.LeaderEpoch++
		_, err := b.UpdatePartition(ctx, p)
		return err
	})
	eventually(t, 30*time.Second, "a sees the partition update", func() bool {
		p, _ := a.Partition("before", 0)
		return p.LeaderEpoch == 1 && p.PartitionEpoch == 1
	})
	// The brokers stay registered across the failover: the keepalives
	// reach the surviving nodes.
	if n := len(b.Brokers()); n != 2 {
		t.Fatalf("b sees %d brokers, want 2: %v", n, fmt.Sprint(b.Brokers()))
	}
}
