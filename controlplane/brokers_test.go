package controlplane

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestBrokerKeyExpiresWithoutKeepalive(t *testing.T) {
	ns := startNATS(t)
	cfg := StoreConfig{BrokerTTL: time.Second, KeepaliveInterval: 200 * time.Millisecond}
	watcher := openStore(t, connect(t, ns), cfg)
	events := record(watcher)
	node := openStore(t, connect(t, ns), cfg)
	ctx := testCtx(t)
	if err := node.RegisterBroker(ctx, broker(2)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "BrokerUp", func() bool {
		return events.has(func(e Event) bool { return e.Kind == BrokerUp && e.Broker == broker(2) })
	})

	// While the keepalive runs the key outlives its TTL: wait until it has
	// been refreshed well past one TTL, and check it never went down.
	first, err := watcher.brokersKV.Get(ctx, brokerKey(2))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "keepalive refreshes past 3 TTLs", func() bool {
		e, err := watcher.brokersKV.Get(ctx, brokerKey(2))
		return err == nil && e.Created().Sub(first.Created()) > 3*cfg.BrokerTTL
	})
	if events.has(func(e Event) bool { return e.Kind == BrokerDown }) {
		t.Fatal("broker went down while its keepalive ran")
	}
	if !slices.Equal(watcher.Brokers(), []Broker{broker(2)}) {
		t.Fatalf("Brokers() = %v", watcher.Brokers())
	}

	// Another process cannot take the id while it is alive.
	other := openStore(t, connect(t, ns), cfg)
	if err := other.RegisterBroker(ctx, broker(2)); !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("duplicate registration: %v", err)
	}

	// Stop the keepalive: the key expires and the watcher is told.
	node.Close()
	eventually(t, 20*time.Second, "BrokerDown after expiry", func() bool {
		return events.has(func(e Event) bool { return e.Kind == BrokerDown && e.Broker.NodeID == 2 }) &&
			len(watcher.Brokers()) == 0
	})

	// Now the id is free.
	if err := other.RegisterBroker(ctx, broker(2)); err != nil {
		t.Fatalf("registration after expiry: %v", err)
	}
	eventually(t, 10*time.Second, "broker back up", func() bool {
		return events.count(func(e Event) bool { return e.Kind == BrokerUp && e.Broker.NodeID == 2 }) == 2
	})

	// A clean deregistration leaves the cache at once and reaches watchers
	// through the delete marker.
	if err := other.DeregisterBroker(ctx); err != nil {
		t.Fatal(err)
	}
	if len(other.Brokers()) != 0 {
		t.Fatalf("deregistering store still lists %v", other.Brokers())
	}
	eventually(t, 10*time.Second, "second BrokerDown", func() bool {
		return events.count(func(e Event) bool { return e.Kind == BrokerDown && e.Broker.NodeID == 2 }) == 2
	})
}

func TestRegisterBrokerValidates(t *testing.T) {
	ns := startNATS(t)
	s := openStore(t, connect(t, ns), StoreConfig{})
	ctx := testCtx(t)
	for _, b := range []Broker{{NodeID: -1, Host: "h", Port: 1}, {NodeID: 1, Port: 1}, {NodeID: 1, Host: "h"}} {
		if err := s.RegisterBroker(ctx, b); !errors.Is(err, ErrInvalidBroker) {
			t.Errorf("%+v: %v", b, err)
		}
	}
	if err := s.RegisterBroker(ctx, broker(1)); err != nil {
		t.Fatal(err)
	}
	// Re-registering updates the details; a second node id is refused.
	moved := broker(1)
	moved.Rack = "r1"
	if err := s.RegisterBroker(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if got := s.Brokers(); !slices.Equal(got, []Broker{moved}) {
		t.Fatalf("Brokers() = %v", got)
	}
	if err := s.RegisterBroker(ctx, broker(2)); !errors.Is(err, ErrInvalidBroker) {
		t.Fatalf("second node id: %v", err)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	ns := startNATS(t)
	nc := connect(t, ns)
	for _, cfg := range []StoreConfig{
		{Replicas: 6},
		{BrokerTTL: 500 * time.Millisecond},
		{BrokerTTL: 2 * time.Second, KeepaliveInterval: 3 * time.Second},
	} {
		if s, err := Open(testCtx(t), nc, cfg); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", cfg)
		}
	}
}
