package txn_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/interbroker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafka/sasl"
	"github.com/shale-io/shale/txn"
)

// TestMarkersCarryARefusedLogin: when the partition leader refuses the
// marker sender's inter-broker login, every partition's error carries the
// refusal (so the coordinator can say so), and still reads as
// COORDINATOR_NOT_AVAILABLE, which it retries.
func TestMarkersCarryARefusedLogin(t *testing.T) {
	c, err := sasl.NewCredential(sasl.ScramSHA512, "broker", "broker-secret", 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sasl.SCRAM(sasl.ScramSHA512, func(context.Context, string) (sasl.Credential, error) { return c, nil })
	if err != nil {
		t.Fatal(err)
	}
	reg := kafka.NewRegistry()
	kafka.RegisterSASL(reg)
	s := kafka.NewServer(kafka.ServerConfig{}, reg, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeListener(ln, kafka.Listener{Name: "SASL_PLAINTEXT", SASL: []kafka.SASLMechanism{m}})
	ctx := proctest.Context(t, 20*time.Second)
	defer s.Shutdown(ctx)

	d, err := interbroker.New(interbroker.Config{Mechanism: interbroker.MechanismSCRAMSHA512, Username: "broker", Password: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	mk := txn.NewKafkaMarkers(func() []string { return []string{ln.Addr().String()} }, d.KgoOpts()...)
	defer mk.Close()
	parts := []txn.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "b", Partition: 3}}
	errs := mk.WriteMarkers(ctx, txn.Markers{ProducerID: 1, Commit: true, Partitions: parts})
	for _, tp := range parts {
		err := errs[tp]
		if !interbroker.Refused(err) || !errors.Is(err, txn.ErrCoordinatorNotAvailable) {
			t.Fatalf("%v: %v, want a refused login that reads as COORDINATOR_NOT_AVAILABLE", tp, err)
		}
	}
}
