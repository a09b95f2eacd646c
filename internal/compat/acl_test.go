package compat

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestConfluentACLs is librdkafka (kcat's library) against the
// authorizer: its AdminClient, over the PLAINTEXT listener whose
// User:ANONYMOUS is a super user, creates a prefixed ALLOW with CreateAcls,
// finds it with DescribeAcls by MATCH on a topic it applies to, and a
// producer logged in with SASL PLAIN writes to that topic; another user's
// producer gets TOPIC_AUTHORIZATION_FAILED in its delivery report; after
// DeleteAcls the first user is refused too.
func TestConfluentACLs(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("alice:alice-secret\nbob:bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms, c.SASLPlainUsersFile = "PLAIN", users
		c.Authorizer, c.SuperUsers = config.AuthorizerStandard, "User:ANONYMOUS"
	})
	ctx := proctest.Context(t, 90*time.Second)
	const topic = "lib-orders"
	createTopic(t, n.KafkaAddr(), topic, 1)

	adm, err := kafka.NewAdminClient(with(confluentConfig(n.KafkaAddr())))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	created, err := adm.CreateACLs(ctx, kafka.ACLBindings{{Type: kafka.ResourceTopic, Name: "lib-",
		ResourcePatternType: kafka.ResourcePatternTypePrefixed, Principal: "User:alice", Host: "*",
		Operation: kafka.ACLOperationWrite, PermissionType: kafka.ACLPermissionTypeAllow}})
	if err != nil || len(created) != 1 || created[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("CreateACLs: %v %v", created, err)
	}
	match := kafka.ACLBindingFilter{Type: kafka.ResourceTopic, Name: topic, ResourcePatternType: kafka.ResourcePatternTypeMatch,
		Operation: kafka.ACLOperationAny, PermissionType: kafka.ACLPermissionTypeAny}
	described, err := adm.DescribeACLs(ctx, match)
	if err != nil || described.Error.Code() != kafka.ErrNoError || len(described.ACLBindings) != 1 ||
		described.ACLBindings[0].Name != "lib-" || described.ACLBindings[0].Principal != "User:alice" {
		t.Fatalf("DescribeACLs by MATCH: %+v %v", described, err)
	}

	produce := func(user string) kafka.ErrorCode {
		t.Helper()
		p, err := kafka.NewProducer(with(confluentConfig(n.ListenerAddr("SASL_PLAINTEXT")), "security.protocol", "SASL_PLAINTEXT",
			"sasl.mechanisms", "PLAIN", "sasl.username", user, "sasl.password", user+"-secret",
			"acks", "all", "message.timeout.ms", 20000))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		reports := make(chan kafka.Event, 1)
		tp := topic
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &tp, Partition: 0}, Value: []byte(user)}, reports); err != nil {
			// librdkafka refuses at once when its metadata already marks
			// the topic unauthorized (a race with its first Metadata).
			if ke, ok := err.(kafka.Error); ok && ke.Code() == kafka.ErrTopicAuthorizationFailed {
				return ke.Code()
			}
			t.Fatalf("%s: produce: %v", user, err)
		}
		select {
		case ev := <-reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				t.Fatalf("%s: delivery report %v", user, ev)
			}
			if m.TopicPartition.Error == nil {
				return kafka.ErrNoError
			}
			if ke, ok := m.TopicPartition.Error.(kafka.Error); ok {
				return ke.Code()
			}
			t.Fatalf("%s: delivery error %v", user, m.TopicPartition.Error)
		case <-ctx.Done():
			t.Fatalf("%s: no delivery report", user)
		}
		return kafka.ErrUnknown
	}
	if c := produce("alice"); c != kafka.ErrNoError {
		t.Fatalf("alice, allowed by the prefixed ACL: %v", c)
	}
	if c := produce("bob"); c != kafka.ErrTopicAuthorizationFailed {
		t.Fatalf("bob, without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", c)
	}

	deleted, err := adm.DeleteACLs(ctx, kafka.ACLBindingFilters{{Type: kafka.ResourceAny, ResourcePatternType: kafka.ResourcePatternTypeAny,
		Operation: kafka.ACLOperationAny, PermissionType: kafka.ACLPermissionTypeAny}})
	if err != nil || len(deleted) != 1 || len(deleted[0].ACLBindings) != 1 {
		t.Fatalf("DeleteACLs: %+v %v", deleted, err)
	}
	if c := produce("alice"); c != kafka.ErrTopicAuthorizationFailed {
		t.Fatalf("alice after DeleteAcls: %v, want TOPIC_AUTHORIZATION_FAILED", c)
	}
}
