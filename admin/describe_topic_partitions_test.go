package admin_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// describeTopicPartitions sends one DescribeTopicPartitions request
// (franz-go's kadm does not have it; kafka-topics.sh --describe of Kafka 4
// sends it) and fails the test on a transport error.
func describeTopicPartitions(t *testing.T, ctx context.Context, cl *kgo.Client, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, name := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = name
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("DescribeTopicPartitions: %v", err)
	}
	return resp
}

// dtpPage is an answer in short: each topic's error and partitions, and the
// next cursor ("" when none).
func dtpPage(resp *kmsg.DescribeTopicPartitionsResponse) (topics []string, cursor string) {
	for _, mt := range resp.Topics {
		e := "OK"
		if err := kerr.TypedErrorForCode(mt.ErrorCode); err != nil {
			e = err.Message
		}
		s := fmt.Sprintf("%s:%s", *mt.Topic, e)
		for _, p := range mt.Partitions {
			s += fmt.Sprintf(",%d", p.Partition)
		}
		topics = append(topics, s)
	}
	if c := resp.NextCursor; c != nil {
		cursor = fmt.Sprintf("%s/%d", c.Topic, c.Partition)
	}
	return topics, cursor
}

// TestDescribeTopicPartitions: DescribeTopicPartitions (issue 26), which
// Kafka 4's kafka-topics.sh --describe sends, answers in topic name order,
// at most ResponsePartitionLimit partitions at a time, with the cursor to
// go on from, as Kafka's handler does: a named topic that does not exist
// is UNKNOWN_TOPIC_OR_PARTITION and takes no room, a cursor outside the
// named topics or with a negative partition is INVALID_REQUEST, and each
// partition's leader, epoch, replicas and ISR are those Metadata answers.
// Before the API was served, every request failed (the node did not
// advertise key 75).
func TestDescribeTopicPartitions(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	cl := testnode.Client(t, n.KafkaAddr())
	ctx := proctest.Context(t, 90*time.Second)
	adm := kadm.NewClient(cl)
	for name, parts := range map[string]int32{"dtp-a": 5, "dtp-b": 3, "dtp-c": 1} {
		resp, err := adm.CreateTopic(ctx, parts, 1, nil, name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	type page struct {
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		topics []string
		want   []string
		next   string
	}
	cur := func(topic string, p int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: p}
	}
	for i, pg := range []page{
		// Named out of order, with a duplicate and a topic that does not
		// exist: sorted, and the limit cuts within dtp-b.
		{6, nil, []string{"dtp-c", "missing", "dtp-a", "dtp-b", "dtp-a"},
			[]string{"dtp-a:OK,0,1,2,3,4", "dtp-b:OK,0"}, "dtp-b/1"},
		{6, cur("dtp-b", 1), []string{"dtp-c", "missing", "dtp-a", "dtp-b"},
			[]string{"dtp-b:OK,1,2", "dtp-c:OK,0", "missing:UNKNOWN_TOPIC_OR_PARTITION"}, ""},
		// A limit that ends exactly at a topic's end points at the next
		// topic's start.
		{5, nil, []string{"dtp-a", "dtp-b"}, []string{"dtp-a:OK,0,1,2,3,4"}, "dtp-b/0"},
		// A limit below 1 is 1.
		{0, cur("dtp-a", 3), []string{"dtp-a"}, []string{"dtp-a:OK,3"}, "dtp-a/4"},
		// An invalid name is INVALID_TOPIC_EXCEPTION.
		{10, nil, []string{"bad/name"}, []string{"bad/name:INVALID_TOPIC_EXCEPTION"}, ""},
		// A cursor outside the topics named, or with a negative partition,
		// fails the request.
		{10, cur("dtp-b", 0), []string{"dtp-a", "dtp-c"},
			[]string{"dtp-a:INVALID_REQUEST", "dtp-c:INVALID_REQUEST"}, ""},
		{10, cur("dtp-a", -1), []string{"dtp-a"}, []string{"dtp-a:INVALID_REQUEST"}, ""},
	} {
		got, next := dtpPage(describeTopicPartitions(t, ctx, cl, pg.limit, pg.cursor, pg.topics...))
		if !slices.Equal(got, pg.want) || next != pg.next {
			t.Errorf("request %d: answered %q, cursor %q; want %q, cursor %q", i, got, next, pg.want, pg.next)
		}
	}

	// Every topic, two partitions at a time: the pages hold each partition
	// of the three topics once, in order, and end with no cursor.
	var all []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("no end after %d pages: %q", pages, all)
		}
		resp := describeTopicPartitions(t, ctx, cl, 2, cursor)
		n := 0
		for _, mt := range resp.Topics {
			for _, p := range mt.Partitions {
				all = append(all, fmt.Sprintf("%s/%d", *mt.Topic, p.Partition))
				n++
			}
		}
		if n > 2 {
			t.Fatalf("page %d holds %d partitions, above the limit of 2", pages, n)
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = cur(resp.NextCursor.Topic, resp.NextCursor.Partition)
	}
	want := []string{"dtp-a/0", "dtp-a/1", "dtp-a/2", "dtp-a/3", "dtp-a/4", "dtp-b/0", "dtp-b/1", "dtp-b/2", "dtp-c/0"}
	if !slices.Equal(all, want) {
		t.Errorf("paging through every topic gave %q, want %q", all, want)
	}

	// The partitions are those Metadata describes.
	md := kmsg.NewPtrMetadataRequest()
	mdt := kmsg.NewMetadataRequestTopic()
	mdt.Topic = kmsg.StringPtr("dtp-b")
	md.Topics = append(md.Topics, mdt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	dresp := describeTopicPartitions(t, ctx, cl, 100, nil, "dtp-b")
	mt, dt := mresp.Topics[0], dresp.Topics[0]
	if dt.TopicID != mt.TopicID || dt.TopicID == [16]byte{} || dt.IsInternal || len(dt.Partitions) != len(mt.Partitions) {
		t.Fatalf("DescribeTopicPartitions %+v, Metadata %+v", dt, mt)
	}
	for i, p := range dt.Partitions {
		m := mt.Partitions[i]
		if p.Partition != m.Partition || p.LeaderID != m.Leader || p.LeaderID != 0 || p.LeaderEpoch != m.LeaderEpoch ||
			!slices.Equal(p.Replicas, m.Replicas) || !slices.Equal(p.ISR, m.ISR) || len(p.OfflineReplicas) != 0 ||
			p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 {
			t.Errorf("partition %d: DescribeTopicPartitions %+v, Metadata %+v", i, p, m)
		}
	}
}
