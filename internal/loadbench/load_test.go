package loadbench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// selfServer is an in-process kfake charged with this process's CPU time.
type selfServer struct{ c *kfake.Cluster }

func (s selfServer) Addr() string                    { return s.c.ListenAddrs()[0] }
func (s selfServer) CPUTime() (time.Duration, error) { return procCPU(os.Getpid()) }

func TestRunAgainstKfake(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Records, cfg.Partitions, cfg.PhaseTimeout = 2000, 4, 60*time.Second
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(cfg.Partitions, cfg.Topic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := Run(context.Background(), selfServer{c}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(cfg.Records * cfg.RecordBytes)
	for name, p := range map[string]Phase{"produce": res.Produce, "consume": res.Consume} {
		if p.Records != cfg.Records || p.Bytes != want || p.Wall <= 0 || p.ServerCPU < 0 {
			t.Fatalf("%s: %+v, want %d records, %d bytes", name, p, cfg.Records, want)
		}
	}
	// Records went to partition i mod 4: each partition ends at 500.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), cfg.Topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != int64(cfg.Records)/int64(cfg.Partitions) {
			t.Errorf("partition %d ends at %d (%v), want %d", o.Partition, o.Offset, o.Err, cfg.Records/int(cfg.Partitions))
		}
	})
	if len(ends[cfg.Topic]) != int(cfg.Partitions) {
		t.Fatalf("end offsets for %d partitions, want %d", len(ends[cfg.Topic]), cfg.Partitions)
	}
}
