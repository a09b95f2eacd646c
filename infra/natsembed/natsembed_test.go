package natsembed

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestStartSingleServerJetStream(t *testing.T) {
	s, err := Start(Config{StoreDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()

	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "k")
	if err != nil || string(e.Value()) != "v" {
		t.Fatalf("get: %v %q", err, e)
	}

	// The TCP URL works too.
	tcp, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	tcp.Close()

	s.Shutdown()
	s.Shutdown() // idempotent
	if _, err := nats.Connect(s.ClientURL(), nats.Timeout(time.Second)); err == nil {
		t.Fatal("connected to a shut down server")
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	cases := map[string]Config{
		"no store dir":       {},
		"public host":        {StoreDir: t.TempDir(), Host: "0.0.0.0"},
		"cluster no name":    {StoreDir: t.TempDir(), Cluster: &ClusterConfig{Name: "c", Port: 1}},
		"cluster no port":    {StoreDir: t.TempDir(), ServerName: "a", Cluster: &ClusterConfig{Name: "c"}},
		"cluster no cluster": {StoreDir: t.TempDir(), ServerName: "a", Cluster: &ClusterConfig{Port: 1}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			cfg.Logger = quietLogger()
			s, err := Start(cfg)
			if !errors.Is(err, ErrInvalidConfig) {
				if s != nil {
					s.Shutdown()
				}
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestStartClusterReplicatedKV(t *testing.T) {
	servers, err := StartCluster(3, t.TempDir(), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}()
	leaders := 0
	for _, s := range servers {
		if s.JetStreamIsLeader() {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("meta leaders = %d, want 1", leaders)
	}

	nc, err := servers[1].Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "r3", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("stream not replicated 3 ways: %+v", info.Cluster)
	}
	if _, err := kv.PutString(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
}
