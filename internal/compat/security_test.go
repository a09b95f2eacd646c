package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testnode"
)

// TestConfluentSASLSSLWithSCRAMSHA512 is librdkafka (kcat's library) over
// SASL_SSL with SCRAM-SHA-512: its AdminClient stores the user with
// AlterUserScramCredentials over the PLAINTEXT listener, then a producer and
// a consumer log in over SASL_SSL (verifying the broker's certificate
// against the test's CA) and move records, and a wrong password is refused
// as an authentication failure.
func TestConfluentSASLSSLWithSCRAMSHA512(t *testing.T) {
	certs := testcerts.NewCA(t, "shale-compat-ca").ServerFiles(t, "broker-0")
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SASL_SSL"), testnode.WithTLS(certs, ""))
	saslAddr := n.ListenerAddr("SASL_SSL")
	ctx := proctest.Context(t, 60*time.Second)

	adm, err := kafka.NewAdminClient(with(confluentConfig(n.KafkaAddr())))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	res, err := adm.AlterUserScramCredentials(ctx, []kafka.UserScramCredentialUpsertion{{User: "carol",
		ScramCredentialInfo: kafka.ScramCredentialInfo{Mechanism: kafka.ScramMechanismSHA512, Iterations: 8192},
		Password:            []byte("carol-secret")}}, nil)
	if err != nil || res.Errors["carol"].Code() != kafka.ErrNoError {
		t.Fatalf("AlterUserScramCredentials: %v %v", err, res.Errors)
	}
	const topic = "librdkafka-sasl-ssl"
	createTopic(t, n.KafkaAddr(), topic, 1)

	secure := func(pass string) kafka.ConfigMap {
		return *with(confluentConfig(saslAddr), "security.protocol", "SASL_SSL", "sasl.mechanisms", "SCRAM-SHA-512",
			"sasl.username", "carol", "sasl.password", pass, "ssl.ca.location", certs.CA)
	}
	p, err := kafka.NewProducer(with(secure("carol-secret"), "acks", "all", "message.timeout.ms", 30000))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const records = 10
	reports := make(chan kafka.Event, records)
	tp := topic
	for i := range records {
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &tp, Partition: 0},
			Value: []byte(fmt.Sprintf("v%d", i))}, reports); err != nil {
			t.Fatal(err)
		}
	}
	for range records {
		select {
		case ev := <-reports:
			if m, ok := ev.(*kafka.Message); !ok || m.TopicPartition.Error != nil {
				t.Fatalf("delivery report %v", ev)
			}
		case <-ctx.Done():
			t.Fatal("delivery reports: deadline")
		}
	}

	c, err := kafka.NewConsumer(with(secure("carol-secret"), "group.id", "shale-compat-unused",
		"enable.auto.commit", false, "fetch.wait.max.ms", 200))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Assign([]kafka.TopicPartition{{Topic: &tp, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < records && ctx.Err() == nil {
		switch ev := c.Poll(200).(type) {
		case *kafka.Message:
			got = append(got, string(ev.Value))
		case kafka.Error:
			if ev.IsFatal() {
				t.Fatalf("consumer: %v", ev)
			}
		}
	}
	if fmt.Sprint(got) != "[v0 v1 v2 v3 v4 v5 v6 v7 v8 v9]" {
		t.Fatalf("consumed %v", got)
	}

	// A wrong password: librdkafka reports an authentication failure as
	// an error event of the client.
	bad, err := kafka.NewProducer(with(secure("not-carol")))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	for {
		select {
		case ev := <-bad.Events():
			if kerr, ok := ev.(kafka.Error); ok && kerr.Code() == kafka.ErrAuthentication {
				return
			}
		case <-ctx.Done():
			t.Fatal("a wrong password was not reported as an authentication failure")
		}
	}
}
