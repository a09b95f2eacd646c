package kafka

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
)

// connCounts is a ConnObserver that counts.
type connCounts struct {
	mu                       sync.Mutex
	opened, closed, rejected map[string]int // by listener, and by reason for rejected
}

func newConnCounts() *connCounts {
	return &connCounts{opened: map[string]int{}, closed: map[string]int{}, rejected: map[string]int{}}
}

func (c *connCounts) ObserveConnectionOpened(listener string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opened[listener]++
}

func (c *connCounts) ObserveConnectionClosed(listener string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed[listener]++
}

func (c *connCounts) ObserveConnectionRejected(listener, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rejected[listener+"/"+reason]++
}

func (c *connCounts) get(m map[string]int, key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return m[key]
}

// describeCluster registers a DescribeCluster handler that answers with the
// listener name in ClusterID.
func describeCluster(reg *Registry) {
	reg.Register(kmsg.DescribeCluster, 0, 1, func(_ context.Context, req *Request) (Reply, error) {
		resp := req.Msg.(*kmsg.DescribeClusterRequest).ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.ClusterID = req.Conn.Listener
		return Reply{Response: resp}, nil
	})
}

// askCluster sends DescribeCluster with franz-go (with opts) and returns
// the listener that answered, or the error.
func askCluster(t *testing.T, addr string, opts ...kgo.Opt) (string, error) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := cl.Request(ctx, kmsg.NewPtrDescribeClusterRequest())
	if err != nil {
		return "", err
	}
	return resp.(*kmsg.DescribeClusterResponse).ClusterID, nil
}

// TestMaxConnectionsPerIP: with max.connections.per.ip 2, a third
// connection from 127.0.0.1 is closed at accept (franz-go gets no answer)
// with a log line and a rejection counted, while the two keep being
// served; once one closes, a new one is served. An override
// (max.connections.per.ip.overrides) raises the address's limit, and with
// a default of 0 (Kafka allows 0 with overrides) only the overridden
// addresses connect at all.
func TestMaxConnectionsPerIP(t *testing.T) {
	obs := newConnCounts()
	ts := startServerListener(t, listenTCP(t), ServerConfig{
		ConnObserver: obs,
		Connections:  &ConnectionLimits{MaxConnections: 100, MaxConnectionsPerIP: 2},
	}, Listener{Name: "CLIENTS"}, describeCluster)
	a, b := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	a.roundTrip(1)
	b.roundTrip(1)
	if _, err := askCluster(t, ts.addr); err == nil {
		t.Fatal("a third connection from 127.0.0.1 was served with max.connections.per.ip 2")
	}
	ts.logs.waitLine(t, "connection refused", "127.0.0.1", "max.connections.per.ip", "2")
	if n := obs.get(obs.rejected, "CLIENTS/max_connections_per_ip"); n < 1 {
		t.Fatalf("%d rejections counted", n)
	}
	a.roundTrip(2)
	b.roundTrip(2)
	if n := obs.get(obs.opened, "CLIENTS"); n != 2 {
		t.Fatalf("%d connections counted as opened, want 2 (a rejected one is not)", n)
	}

	a.nc.Close()
	waitFor(t, "the closed connection to be untracked", func() bool { return obs.get(obs.closed, "CLIENTS") == 1 })
	if got, err := askCluster(t, ts.addr); err != nil || got != "CLIENTS" {
		t.Fatalf("after a connection closed: %q, %v", got, err)
	}

	for _, tc := range []struct {
		name         string
		perIP, allow int
	}{
		{"override above the default", 1, 3},
		{"override with a default of 0", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServerListener(t, listenTCP(t), ServerConfig{Connections: &ConnectionLimits{
				MaxConnections: 100, MaxConnectionsPerIP: tc.perIP,
				MaxConnectionsPerIPOverrides: map[netip.Addr]int{netip.MustParseAddr("127.0.0.1"): tc.allow},
			}}, Listener{Name: "CLIENTS"}, describeCluster)
			for i := range tc.allow {
				dialRaw(t, ts.addr).roundTrip(int32(i))
			}
			c := dialRaw(t, ts.addr)
			c.roundTripFails()
		})
	}
}

// TestMaxConnections: max.connections caps the node's connections over
// all listeners; a connection over it is closed at accept with a log
// line, except on the inter-broker listener, whose connections Kafka
// always accepts (they are counted).
func TestMaxConnections(t *testing.T) {
	obs := newConnCounts()
	reg := NewRegistry()
	describeCluster(reg)
	logs := &logSink{}
	s := NewServer(ServerConfig{ConnObserver: obs, Connections: &ConnectionLimits{MaxConnections: 2, MaxConnectionsPerIP: 100}}, reg, slog.New(logs))
	clients, brokers := listenTCP(t), listenTCP(t)
	served := make(chan error, 2)
	go func() { served <- s.ServeListener(clients, Listener{Name: "CLIENTS"}) }()
	go func() { served <- s.ServeListener(brokers, Listener{Name: "BROKERS", InterBroker: true}) }()
	t.Cleanup(func() {
		ctx := proctest.Context(t, testTimeout)
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		for range 2 {
			if err := <-served; err != ErrServerClosed {
				t.Errorf("ServeListener returned %v", err)
			}
		}
	})
	dialRaw(t, clients.Addr().String()).roundTrip(1)
	dialRaw(t, brokers.Addr().String()).roundTrip(1)
	if _, err := askCluster(t, clients.Addr().String()); err == nil {
		t.Fatal("a third connection was served with max.connections 2")
	}
	logs.waitLine(t, "connection refused", "max.connections", "2")
	if n := obs.get(obs.rejected, "CLIENTS/max_connections"); n < 1 {
		t.Fatalf("%d rejections counted", n)
	}
	if got, err := askCluster(t, brokers.Addr().String()); err != nil || got != "BROKERS" {
		t.Fatalf("the inter-broker listener over max.connections: %q, %v; want served", got, err)
	}
}

// roundTripFails asserts that the server closes the connection without
// answering an ApiVersions request.
func (c *rawClient) roundTripFails() {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.nc.Write(c.frame(req, 1)); err != nil {
		return // closed before the write: refused
	}
	if _, _, err := c.readFrame(); err == nil {
		c.t.Fatal("a connection over the limit was answered")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatal("a connection over the limit was neither answered nor closed")
	}
}
