package tieringe2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/internal/testnode"
)

// A follower, too, keeps only the hot tail: once the leader's uploads cover
// its local segments and they are past local retention, they go, so a
// follower's disk does not grow with the topic's history.
func TestFollowerAppliesTieredLocalRetention(t *testing.T) {
	env := startS3(t)
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 2, testnode.WithS3(env.srv.Endpoint, env.bucket),
		testnode.WithTiering(100*time.Millisecond))
	adm := kadm.NewClient(newClient(t, nodes[0].KafkaAddr()))
	ctx := ctxT(t, 60*time.Second)
	waitFor(t, 20*time.Second, "2 brokers", func() bool {
		m, err := adm.Metadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	const topic = "both"
	resp, err := adm.CreateTopic(ctx, 1, 2, tieredTopicConfig, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	produceRange(t, nodes[0].KafkaAddr(), topic, 0, n)
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := nodes[m.Topics[topic].Partitions[0].Leader-1]
	follower := nodes[2-m.Topics[topic].Partitions[0].Leader]
	waitTiered(t, leader, topic, 5, n/2)
	waitFor(t, 60*time.Second, "the follower's local log start past half the log", func() bool {
		return localLogStart(follower, topic) >= n/2
	})
	// What the follower dropped is in the bucket: every offset below its
	// local start is in a CopyFinished segment (read on the follower).
	fs := localLogStart(follower, topic)
	var covered int64
	for _, s := range finishedSegments(follower, topic) {
		if s.BaseOffset <= covered {
			covered = max(covered, s.EndOffset+1)
		}
	}
	if covered < fs {
		t.Fatalf("the follower dropped offsets below %d, the bucket covers only below %d", fs, covered)
	}
	consumeFranz(t, follower.KafkaAddr(), topic, 0, n)
}
