package replica_test

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/replica"
)

// kafkaFetcherID is Kafka's AbstractFetcherManager.getFetcherId:
// abs(31 * topic.hashCode() + partition) % numFetchers.
func kafkaFetcherID(topic string, p int32, n int) int {
	var h int32
	for _, r := range utf16.Encode([]rune(topic)) {
		h = 31*h + int32(r)
	}
	v := 31*h + p
	if v < 0 {
		v = -v
	}
	if v < 0 {
		v = 0
	}
	return int(v) % n
}

// TestReplicaFetcherSettings runs two nodes with num_replica_fetchers=3 and
// non-default replica.fetch.* settings: each node follows the other's
// partitions through up to three fetchers per leader, each partition on the
// fetcher Kafka's hash names, and every Fetch carries the settings.
func TestReplicaFetcherSettings(t *testing.T) {
	const topic, parts = "fetchers", 12
	settings := func(c *config.Broker) {
		c.NumReplicaFetchers = 3
		c.ReplicaFetchWaitMax = 300 * time.Millisecond
		c.ReplicaFetchMinBytes = 7
		c.ReplicaFetchMaxBytes = 123456
		c.ReplicaFetchResponseMaxBytes = 2345678
	}
	nodes, ctx, adm, prod := replicatedTopic(t, 2, topic, parts, 90*time.Second, settings)
	// acks=all with min.insync.replicas=2: every partition's follower
	// fetches it.
	if err := prod.ProduceSync(ctx, testnode.Records(topic, 200, "a")...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	fetchers, leaders := 0, 0
	for i, n := range nodes {
		self := int32(i + 1)
		want := map[int]map[int32][]string{} // leader -> index -> partitions
		for _, p := range m.Topics[topic].Partitions {
			if p.Leader == self {
				continue
			}
			idx := kafkaFetcherID(topic, p.Partition, 3)
			if want[idx] == nil {
				want[idx] = map[int32][]string{}
			}
			want[idx][p.Leader] = append(want[idx][p.Leader], fmt.Sprintf("%s-%d", topic, p.Partition))
		}
		var last []replica.FetcherStatus
		proctest.Eventually(t, 20*time.Second, fmt.Sprintf("node %d's fetchers", self), func() bool {
			last = n.ReplicaFetchers()
			count := 0
			for _, st := range last {
				w := want[st.Index][st.Leader]
				slices.Sort(w)
				if !slices.Equal(st.Partitions, w) || st.Fetches == 0 {
					return false
				}
				count++
			}
			wantCount := 0
			for _, byLeader := range want {
				wantCount += len(byLeader)
			}
			return count == wantCount
		})
		fetchers += len(last)
		byLeader := map[int32]bool{}
		for _, st := range last {
			byLeader[st.Leader] = true
		}
		leaders += len(byLeader)
		for _, st := range last {
			if st.MaxWaitMillis != 300 || st.MinBytes != 7 || st.MaxBytes != 2345678 || st.PartitionMaxBytes != 123456 {
				t.Fatalf("node %d fetcher %d/%d sent %+v", self, st.Leader, st.Index, st)
			}
		}
		t.Logf("node %d: %d fetchers: %+v", self, len(last), last)
	}
	if fetchers <= leaders {
		t.Fatalf("%d fetchers for %d followed leaders: partitions not split", fetchers, leaders)
	}
}
