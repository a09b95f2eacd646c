package replica

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafka/sasl"
)

// TestFetchConnLogsInAgainBeforeTheSessionEnds: against a leader whose
// SASL sessions last 2 s (connections.max.reauth.ms, KIP-368), which
// closes a connection whose session ended at its next request, the fetch
// connection dials and logs in again before the end, so no Fetch fails.
func TestFetchConnLogsInAgainBeforeTheSessionEnds(t *testing.T) {
	cred, err := sasl.NewCredential(sasl.ScramSHA512, "broker", "broker-secret", 0)
	if err != nil {
		t.Fatal(err)
	}
	mech, err := sasl.SCRAM(sasl.ScramSHA512, func(context.Context, string) (sasl.Credential, error) { return cred, nil })
	if err != nil {
		t.Fatal(err)
	}
	var logins atomic.Int32
	reg := kafka.NewRegistry()
	kafka.RegisterSASL(reg)
	reg.Register(kmsg.Fetch, 12, 12, func(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
		return kafka.Reply{Response: req.Msg.(*kmsg.FetchRequest).ResponseKind()}, nil
	})
	s := kafka.NewServer(kafka.ServerConfig{}, reg, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const lifetime = 2 * time.Second
	go s.ServeListener(countingListener{ln, &logins}, kafka.Listener{Name: "SASL_PLAINTEXT", SASL: []kafka.SASLMechanism{mech}, MaxReauth: lifetime})
	ctx := proctest.Context(t, 30*time.Second)
	defer s.Shutdown(ctx)

	d, err := interbroker.New(interbroker.Config{Mechanism: interbroker.MechanismSCRAMSHA512, Username: "broker", Password: "broker-secret"})
	if err != nil {
		t.Fatal(err)
	}
	c := newFetchConn(d, ln.Addr().String(), "test")
	defer c.Close()
	fetch := func() {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis = 1, 0
		if _, err := c.Fetch(ctx, req); err != nil {
			t.Fatalf("Fetch after %d connections: %v", logins.Load(), err)
		}
	}
	// Fetch through more than two session lifetimes, every 100 ms.
	end := time.Now().Add(2*lifetime + 500*time.Millisecond)
	n := 0
	proctest.Poll(time.Until(end)+time.Second, 100*time.Millisecond, func() bool {
		fetch()
		n++
		return time.Now().After(end)
	})
	if got := logins.Load(); got < 3 || n < 20 {
		t.Fatalf("%d fetches over %d connections: want a new login before each session's end (at least 3)", n, got)
	}
}

// countingListener counts the connections accepted.
type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}
