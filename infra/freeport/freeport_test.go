package freeport

import (
	"net"
	"testing"
)

// The kernel readily hands a just-closed port to the next listen on port 0;
// Port must not (the replicationtest node whose admin address was another
// node's Kafka address, in CI).
func TestPortNeverRepeats(t *testing.T) {
	seen := make(map[int]bool)
	for range 2000 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

func TestAddrIsBindable(t *testing.T) {
	a, err := Addr()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		t.Fatalf("listen on %s: %v", a, err)
	}
	ln.Close()
}

// A port in the ephemeral range can be taken by any outgoing connection's
// source port or listen on port 0 between Port and its user's bind (a NATS
// proxy on port 0 was given a node's admin port in replicationtest). Port
// picks below that range where there is room.
func TestPortBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	if lo-lowest < 1000 {
		t.Skipf("ephemeral range starts at %d: no room below it", lo)
	}
	// Many listens on port 0 and outgoing connections meanwhile: none may
	// land on a port handed out.
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	for range 200 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowest || p >= lo {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, lo)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
		if q := ln.Addr().(*net.TCPAddr).Port; q == p {
			t.Fatalf("a listen on port 0 got %d, just handed out", q)
		}
	}
}
