package group_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// group.consumer.max.size and group.share.max.size on a real node: with
// room for two members, a third member of a KIP-848 consumer group and of
// a share group gets GROUP_MAX_SIZE_REACHED with Kafka's message, and
// joins once a member left. Before, nothing bounded a group.
func TestGroupMaxSize(t *testing.T) {
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.GroupConsumerMaxSize = 2
		c.GroupShareMaxSize = 2
	})
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 60*time.Second)
	testnode.CreateTopic(t, kadm.NewClient(cl), "sized", 1)

	consumer := func(member string, epoch int32) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = "sized-848", member, epoch
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.Topics = 5000, []string{"sized"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		return coordinated(t, func() (int16, *string, error) {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return 0, nil, err
			}
			return resp.ErrorCode, resp.ErrorMessage, nil
		})
	}
	share := func(member string, epoch int32) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = "sized-share", member, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"sized"}
		}
		return coordinated(t, func() (int16, *string, error) {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return 0, nil, err
			}
			return resp.ErrorCode, resp.ErrorMessage, nil
		})
	}
	for _, c := range []struct {
		kind string
		hb   func(string, int32) (int16, string)
		msg  string
	}{
		{"consumer", consumer, "The consumer group has reached its maximum capacity of 2 members."},
		{"share", share, "The share group has reached its maximum capacity of 2 members."},
	} {
		for _, m := range []string{"member-1", "member-2"} {
			if code, msg := c.hb(m, 0); code != 0 {
				t.Fatalf("%s group: %s joins: %v %q", c.kind, m, kerr.ErrorForCode(code), msg)
			}
		}
		if code, msg := c.hb("member-3", 0); code != kerr.GroupMaxSizeReached.Code || msg != c.msg {
			t.Fatalf("%s group: a third member: %v %q, want GROUP_MAX_SIZE_REACHED %q", c.kind, kerr.ErrorForCode(code), msg, c.msg)
		}
		if code, msg := c.hb("member-1", -1); code != 0 {
			t.Fatalf("%s group: member-1 leaves: %v %q", c.kind, kerr.ErrorForCode(code), msg)
		}
		if code, msg := c.hb("member-3", 0); code != 0 {
			t.Fatalf("%s group: member-3 joins once member-1 left: %v %q", c.kind, kerr.ErrorForCode(code), msg)
		}
	}
}

// coordinated sends a group request until its coordinator answers it (not
// loading, not moved or unavailable), and returns that answer's error code
// and message.
func coordinated(t *testing.T, send func() (code int16, msg *string, err error)) (int16, string) {
	t.Helper()
	var code int16
	var msg *string
	var sendErr error
	proctest.Eventually(t, 30*time.Second, "the group coordinator", func() bool {
		code, msg, sendErr = send()
		return sendErr != nil || (code != kerr.CoordinatorLoadInProgress.Code && code != kerr.NotCoordinator.Code &&
			code != kerr.CoordinatorNotAvailable.Code)
	})
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	if msg == nil {
		return code, ""
	}
	return code, *msg
}
