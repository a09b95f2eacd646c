package config

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"
)

func TestConnectionSettings(t *testing.T) {
	b := Defaults()
	b.MaxConnectionsPerIP = 0
	b.MaxConnectionsPerIPOverrides = "127.0.0.1:200, [::1]:10,10.0.0.7:0,fe80::1:3"
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	got, err := b.ConnectionsPerIPOverrides()
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr]int{
		netip.MustParseAddr("127.0.0.1"): 200, netip.MustParseAddr("::1"): 10,
		netip.MustParseAddr("10.0.0.7"): 0, netip.MustParseAddr("fe80::1"): 3,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("overrides %v, want %v", got, want)
	}

	for _, tc := range []struct {
		name string
		set  func(*Broker)
	}{
		{"per-ip 0 without overrides", func(b *Broker) { b.MaxConnectionsPerIP = 0 }},
		{"negative max", func(b *Broker) { b.MaxConnections = -1 }},
		{"host name override", func(b *Broker) { b.MaxConnectionsPerIPOverrides = "kafka-0.example.com:10" }},
		{"override without count", func(b *Broker) { b.MaxConnectionsPerIPOverrides = "127.0.0.1" }},
		{"negative override", func(b *Broker) { b.MaxConnectionsPerIPOverrides = "127.0.0.1:-2" }},
		{"address twice", func(b *Broker) { b.MaxConnectionsPerIPOverrides = "127.0.0.1:2,::ffff:127.0.0.1:3" }},
		{"receive size below a header", func(b *Broker) { b.SASLServerMaxReceiveSize = 4 }},
		{"no telemetry payload", func(b *Broker) { b.TelemetryMaxBytes = 0 }},
		{"negative delay", func(b *Broker) { b.ConnectionFailedAuthenticationDelay = -1 }},
	} {
		b := Defaults()
		tc.set(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", tc.name, err)
		}
	}
}
