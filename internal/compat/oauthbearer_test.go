package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testjwt"
	"github.com/shale-io/shale/internal/testnode"
)

// TestConfluentOAuthBearer is librdkafka with OAUTHBEARER: the application
// hands it signed JWTs on its token-refresh events; it produces over a
// SASL_PLAINTEXT listener whose connections.max.reauth.ms is 2 s and
// re-authenticates on its connections (KIP-368) while records keep
// flowing; a token of the wrong issuer is reported as an authentication
// failure.
func TestConfluentOAuthBearer(t *testing.T) {
	key := testjwt.NewKey(t, "idp-1", "ES256")
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, testjwt.JWKSOf(key), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms = "OAUTHBEARER"
		c.SASLOAuthBearerJWKSEndpointURL = "file://" + jwks
		c.SASLOAuthBearerExpectedIssuer = "https://idp.example"
		c.ConnectionsMaxReauth = 2 * time.Second
	})
	ctx := proctest.Context(t, 90*time.Second)
	const topic = "librdkafka-oauth"
	createTopic(t, n.KafkaAddr(), topic, 1)

	token := func(iss string) kafka.OAuthBearerToken {
		now := time.Now()
		return kafka.OAuthBearerToken{Principal: "app", Expiration: now.Add(time.Hour),
			TokenValue: key.Sign(t, nil, map[string]any{"sub": "app", "iss": iss, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})}
	}
	p, err := kafka.NewProducer(with(confluentConfig(n.ListenerAddr("SASL_PLAINTEXT")), "security.protocol", "SASL_PLAINTEXT",
		"sasl.mechanisms", "OAUTHBEARER", "acks", "all", "message.timeout.ms", 30000))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	reports := make(chan kafka.Event, 1)
	tp := topic
	produce := func(i int) {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &tp, Partition: 0},
			Value: []byte(fmt.Sprintf("v%d", i))}, reports); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case ev := <-p.Events():
				switch ev := ev.(type) {
				case kafka.OAuthBearerTokenRefresh:
					if err := p.SetOAuthBearerToken(token("https://idp.example")); err != nil {
						t.Fatal(err)
					}
				case kafka.Error:
					t.Fatalf("producer: %v", ev)
				}
			case ev := <-reports:
				if m, ok := ev.(*kafka.Message); !ok || m.TopicPartition.Error != nil {
					t.Fatalf("delivery report of record %d: %v", i, ev)
				}
				return
			case <-ctx.Done():
				t.Fatalf("record %d: no delivery report", i)
			}
		}
	}
	records := 0
	for reauths(t, n) < 2 {
		if records >= 50_000 || ctx.Err() != nil {
			t.Fatalf("%v re-authentications after %d records, want 2", reauths(t, n), records)
		}
		for range 20 {
			produce(records)
			records++
		}
	}
	t.Logf("%d records across %v re-authentications", records, reauths(t, n))

	bad, err := kafka.NewProducer(with(confluentConfig(n.ListenerAddr("SASL_PLAINTEXT")), "security.protocol", "SASL_PLAINTEXT",
		"sasl.mechanisms", "OAUTHBEARER"))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	for {
		select {
		case ev := <-bad.Events():
			switch ev := ev.(type) {
			case kafka.OAuthBearerTokenRefresh:
				if err := bad.SetOAuthBearerToken(token("https://evil.example")); err != nil {
					t.Fatal(err)
				}
			case kafka.Error:
				if ev.Code() == kafka.ErrAuthentication {
					return
				}
			}
		case <-ctx.Done():
			t.Fatal("a token of the wrong issuer was not reported as an authentication failure")
		}
	}
}

// reauths reads the node's count of OAUTHBEARER re-authentications.
func reauths(t *testing.T, n *broker.Node) float64 {
	t.Helper()
	v, _ := testnode.MetricValue(testnode.Scrape(t, n), "kafka_server_socketservermetrics_successful_reauthentication_total",
		"listener", "SASL_PLAINTEXT", "mechanism", "OAUTHBEARER")
	return v
}
