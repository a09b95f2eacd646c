package controlplane

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/internal/proctest"
)

// livenessStoreConfig is the stores' config in the liveness tests: a
// BrokerTTL far longer than the tests, so that only the prober removes a
// session.
var livenessStoreConfig = StoreConfig{BrokerTTL: 30 * time.Second, Logger: quietLogger()}

// startProber starts a NATS server and broker 1, registered and
// controller; registered reports whether broker 1's store lists broker 2.
func startProber(t *testing.T) (srv *natsembed.Server, c *Controller, registered func() bool) {
	t.Helper()
	srv = startNATS(t)
	s1 := openStore(t, connect(t, srv), livenessStoreConfig)
	if err := s1.RegisterBroker(testCtx(t), broker(1)); err != nil {
		t.Fatal(err)
	}
	c, err := StartController(testCtx(t), s1, ControllerConfig{NodeID: 1, LeaseTTL: time.Second, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	eventually(t, 10*time.Second, "node 1 controller", c.IsController)
	return srv, c, func() bool {
		return slices.ContainsFunc(s1.Brokers(), func(b Broker) bool { return b.NodeID == 2 })
	}
}

// registerBroker2 registers broker 2 at ln's address through a store of its
// own connection, which it returns (closing it is the process's NATS side
// going away).
func registerBroker2(t *testing.T, srv *natsembed.Server, ln net.Listener) *nats.Conn {
	t.Helper()
	nc2 := connect(t, srv)
	s2 := openStore(t, nc2, livenessStoreConfig)
	b2 := Broker{NodeID: 2, Host: "127.0.0.1", Port: int32(ln.Addr().(*net.TCPAddr).Port)}
	if err := s2.RegisterBroker(testCtx(t), b2); err != nil {
		t.Fatal(err)
	}
	return nc2
}

// TestControllerRemovesDeadBrokerProcess: a registered broker whose NATS
// connection is gone keeps its registration while its Kafka address still
// accepts connections (it may be alive, cut off from NATS: the session
// timeout decides), and loses it at once, long before its 30 s BrokerTTL,
// once the address refuses them too (the process is gone). Its tripwires
// never stay up, so this is the probes' own judgment.
func TestControllerRemovesDeadBrokerProcess(t *testing.T) {
	srv, c, registered := startProber(t)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Broker 2's "process" closes every connection it accepts, tripwires
	// included, so the prober probes it every round (as it does a broker
	// whose tripwire cannot stay up).
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	nc2 := registerBroker2(t, srv, ln)
	eventually(t, 10*time.Second, "node 1 sees node 2", registered)
	before, from := c.probes.Load(), time.Now()
	// Probes are answered: nothing happens over ten probe rounds.
	stays := func(what string) {
		t.Helper()
		if proctest.Poll(10*livenessInterval, livenessInterval/2, func() bool { return !registered() }) == nil {
			t.Fatal(what)
		}
	}
	stays("a live broker's registration was removed")

	// A probe a round, and one more for each tripwire that ended (each
	// tried a round apart): not a probe and a new tripwire for every
	// connection the broker closes, as fast as it closes them.
	rounds := int64(time.Since(from)/livenessInterval) + 1
	if n := c.probes.Load() - before; n == 0 || n > 2*rounds+2 {
		t.Fatalf("%d probes in %d rounds of a broker that closes its tripwires, want 1 to %d", n, rounds, 2*rounds+2)
	}
	nc2.Close() // the connection is gone; the Kafka address still accepts
	stays("the registration of a broker whose Kafka address accepts connections was removed")
	ln.Close() // and now nothing listens there: the process is gone
	eventually(t, 10*time.Second, "node 2's registration removed", func() bool { return !registered() })
}

// TestIdleProberSendsNoProbes: while a broker's process holds the other
// end of the prober's tripwire, the controller sends it no probe (at 400 ms
// a probe, the most of an idle cluster's NATS messages); when the process
// ends (its listener and every connection it accepted close, as the kernel
// closes a killed process's sockets), the tripwire starts a probe at once
// and the broker's session is removed.
func TestIdleProberSendsNoProbes(t *testing.T) {
	srv, c, registered := startProber(t)

	// Broker 2's "process": a listener that accepts and holds what it accepts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- conn
		}
	}()
	nc2 := registerBroker2(t, srv, ln)
	eventually(t, 10*time.Second, "node 1 sees node 2 and holds a tripwire to it", func() bool {
		return registered() && len(accepted) > 0
	})
	before := c.probes.Load()
	if proctest.Poll(10*livenessInterval, livenessInterval/2, func() bool { return c.probes.Load() != before }) == nil {
		t.Fatalf("probes sent to a broker whose tripwire is up: %d, then %d", before, c.probes.Load())
	}

	// The process ends: its NATS connection, its listener, its connections.
	nc2.Close()
	ln.Close()
	for len(accepted) > 0 {
		(<-accepted).Close()
	}
	eventually(t, 10*time.Second, "node 2's registration removed", func() bool { return !registered() })
	if c.probes.Load() == before {
		t.Fatal("the session was removed without a probe")
	}
}
