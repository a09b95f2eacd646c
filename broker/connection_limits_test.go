package broker_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestNodeConnectionSettings: a node's sasl_server_max_receive_size,
// max_connections_per_ip and its overrides reach its listeners, and its
// connections show in the socket-server metrics. A raw request of 2 KiB
// before authentication closes a SASL_PLAINTEXT connection at a 1 KiB cap;
// with max_connections_per_ip 0 and 127.0.0.1 allowed 3, franz-go is served
// while a fourth connection is refused and counted.
func TestNodeConnectionSettings(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SASL_PLAINTEXT"), func(c *config.Broker) {
		c.SASLServerMaxReceiveSize = 1024
		c.MaxConnectionsPerIP, c.MaxConnectionsPerIPOverrides = 0, "127.0.0.1:3"
	})
	saslAddr := n.ListenerAddr("SASL_PLAINTEXT")

	nc, err := net.DialTimeout("tcp", saslAddr, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = string(make([]byte, 2048)), "1"
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, av, 1)
	if binary.BigEndian.Uint32(frame) <= 1024 {
		t.Fatalf("frame of %d bytes", len(frame))
	}
	nc.Write(frame)
	if _, err := io.ReadFull(nc, make([]byte, 4)); err == nil {
		t.Fatal("a 2 KiB request before authentication was answered with sasl_server_max_receive_size 1024")
	}
	nc.Close()

	// Up to 3 connections from 127.0.0.1: franz-go's one is served.
	cl := testnode.Client(t, n.KafkaAddr(), kgo.RequestRetries(0))
	ping := func(cl *kgo.Client) error {
		ctx := proctest.Context(t, 20*time.Second)
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	if err := ping(cl); err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for len(held) < 3 {
		// Hold connections until one is refused (the node may hold some
		// of its own from 127.0.0.1 too), but no more than the limit.
		c, err := net.DialTimeout("tcp", n.KafkaAddr(), 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1))
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			break // refused: over the limit
		}
	}
	var refused float64
	if err := proctest.Poll(20*time.Second, 10*time.Millisecond, func() bool {
		refused, _ = testnode.MetricValue(testnode.Scrape(t, n), "shale_network_connections_rejected_total", "listener", "PLAINTEXT", "reason", "max_connections_per_ip")
		return refused >= 1
	}); err != nil {
		t.Fatalf("no refusal counted with 3 connections allowed from 127.0.0.1 (%d held)", len(held))
	}
	fams := testnode.Scrape(t, n)
	if v, ok := testnode.MetricValue(fams, "kafka_server_socketservermetrics_connection_creation_total", "listener", "SASL_PLAINTEXT"); !ok || v < 1 {
		t.Fatalf("connection_creation_total{listener=SASL_PLAINTEXT} = %v, %v", v, ok)
	}
	if v, ok := testnode.MetricValue(fams, "kafka_server_socketservermetrics_failed_authentication_total", "listener", "SASL_PLAINTEXT"); !ok || v != 1 {
		t.Fatalf("failed_authentication_total{listener=SASL_PLAINTEXT} = %v, %v; want the oversized request counted", v, ok)
	}
	if v, ok := testnode.MetricValue(fams, "kafka_server_socketservermetrics_connection_count", "listener", "PLAINTEXT"); !ok || v < 1 || v > 3 {
		t.Fatalf("connection_count{listener=PLAINTEXT} = %v, %v; want 1 to 3", v, ok)
	}
}
