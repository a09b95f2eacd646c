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
