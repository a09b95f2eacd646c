package broker_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestFailedLoginFloodDoesNotStopOthers: four clients log in with a wrong
// SCRAM password over and over (bounded) while a good client produces 150
// records one at a time on its own connection. The good client finishes
// with every record acknowledged (the bound is generous: the machine is
// shared; `make bench` measures the ratio), each bad login is
// SASL_AUTHENTICATION_FAILED, and failed_authentication_total counts every
// one of them. The flood runs at full pressure: the failed-authentication
// delay (connection.failed.authentication.delay.ms), which slows each bad
// client to one login per delay and is tested in kafka/, is off, so that
// the node does all the SCRAM work a flood can ask of it.
func TestFailedLoginFloodDoesNotStopOthers(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms = "SCRAM-SHA-256"
		c.ConnectionFailedAuthenticationDelay = 0
	})
	addr := n.ListenerAddr("SASL_PLAINTEXT")
	ctx := proctest.Context(t, 90*time.Second)
	admin := testnode.Client(t, n.KafkaAddr())
	if _, err := kadm.NewClient(admin).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "good", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "good-secret"}}); err != nil {
		t.Fatal(err)
	}
	const topic = "flood"
	good, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.SASL(scram.Auth{User: "good", Pass: "good-secret"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if _, err := kadm.NewClient(good).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	goodDone := make(chan struct{})
	var bad, badDuring, notRefused atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200 && ctx.Err() == nil; i++ {
				select {
				case <-goodDone:
					return
				default:
				}
				cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second),
					kgo.SASL(scram.Auth{User: "good", Pass: "wrong-password"}.AsSha256Mechanism()))
				if err != nil {
					t.Error(err)
					return
				}
				_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
				cl.Close()
				bad.Add(1)
				if !errors.Is(err, kerr.SaslAuthenticationFailed) {
					notRefused.Add(1)
				}
				select {
				case <-goodDone:
				default:
					badDuring.Add(1)
				}
			}
		}()
	}
	start := time.Now()
	for i := range 150 {
		if err := good.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			close(goodDone)
			wg.Wait()
			t.Fatalf("good client, record %d after %v under the flood: %v", i, time.Since(start), err)
		}
	}
	took := time.Since(start)
	close(goodDone)
	wg.Wait()
	if notRefused.Load() != 0 {
		t.Fatalf("%d of %d bad logins were not SASL_AUTHENTICATION_FAILED", notRefused.Load(), bad.Load())
	}
	if badDuring.Load() < 20 {
		t.Fatalf("only %d bad logins ended while the good client produced (%v): no flood to speak of", badDuring.Load(), took)
	}
	if v := testnode.MustMetric(t, testnode.Scrape(t, n), "kafka_server_socketservermetrics_failed_authentication_total",
		"listener", "SASL_PLAINTEXT", "mechanism", "SCRAM-SHA-256"); v != float64(bad.Load()) {
		t.Fatalf("failed_authentication_total %v, want the %d bad logins", v, bad.Load())
	}
	t.Logf("150 records in %v beside %d failed logins (%d during)", took, bad.Load(), badDuring.Load())
}
