package proctest

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestClientMetadata points a Node's Kafka address at a kfake broker (no
// child runs): Metadata asks it alone, and the client is replaced once a
// run ends.
func TestClientMetadata(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "seeded"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	n := Serve(t, "/bin/false", t.TempDir(), nil)
	n.kafka = kf.ListenAddrs()[0]

	resp, err := n.Metadata(Context(t, 20*time.Second), "seeded")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("metadata: %d brokers, %d topics, want 1 broker and topic seeded with 3 partitions", len(resp.Brokers), len(resp.Topics))
	}
	cl := n.Client()
	if n.Client() != cl {
		t.Fatal("Client made a second client during one run")
	}
	n.closeClient() // what Kill, Stop and WaitExit do once the run has exited
	if n.Client() == cl {
		t.Fatal("Client kept the ended run's client")
	}
}
