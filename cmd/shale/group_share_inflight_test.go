package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestGroupDescribeShareInFlight: `shale group describe` of a share group
// shows, per share-partition, the records in flight on its leader, which
// no Kafka API reports, from the node's admin HTTP API (--admin):
// a member holding ten records (raw ShareFetch, no acknowledgement) makes
// IN-FLIGHT 10, ACQUIRED 10 and LAG 10; after it accepts two and releases
// three, the start offset is 2, IN-FLIGHT 8, ACQUIRED 5, AVAILABLE 3, LAG 8.
// With no admin listener behind --admin the counts are unknown ("-") and
// the reason is given. Before, describe showed the start offset and lag
// only.
func TestGroupDescribeShareInFlight(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	addr, admin := n.KafkaAddr(), n.AdminAddr()
	ctx := proctest.Context(t, 90*time.Second)
	with := func(args ...string) []string { return append(args, "--bootstrap", addr) }
	const topic, group, member = "jobs-inflight", "ginflight", "holder-1"
	cliOK(t, with("topic", "create", topic, "-p", "1")...)
	cl := testnode.Client(t, addr)
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, td[topic].Err)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, member, 0, []string{topic}
	if r, err := hb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("ShareGroupHeartbeat: %v %+v", err, r)
	}
	epoch := int32(0)
	fetch := func() []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 100, 1, 1<<20, 100, 100
		if epoch == 0 {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = td[topic].ID
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ShareFetch at epoch %d: %v %v", epoch, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		epoch++
		var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out = append(out, rp.AcquiredRecords...)
			}
		}
		return out
	}
	ack := func(first, last int64, typ int8) {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = td[topic].ID
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("ShareAcknowledge %d-%d type %d: %v %+v", first, last, typ, err, resp)
		}
		epoch++
	}

	fetch() // the share-partition starts at the high watermark: 0
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	held := 0
	if err := proctest.WaitFor(30*time.Second, func() bool {
		for _, r := range fetch() {
			held += int(r.LastOffset - r.FirstOffset + 1)
		}
		return held == 10
	}); err != nil {
		t.Fatalf("acquired %d of 10 records", held)
	}

	describe := func(adminAddr string) groupDescription {
		t.Helper()
		var ds []groupDescription
		out := cliOK(t, with("group", "describe", group, "--admin", adminAddr, "--output", "json")...)
		if err := json.Unmarshal([]byte(out), &ds); err != nil || len(ds) != 1 || len(ds[0].Partitions) != 1 {
			t.Fatalf("describe: %v\n%s", err, out)
		}
		return ds[0]
	}
	counts := func(p partitionLag) string {
		c := func(n *int) string {
			if n == nil {
				return "nil"
			}
			return fmt.Sprint(*n)
		}
		return fmt.Sprintf("start %d lag %d in-flight %s acquired %s available %s", p.CurrentOffset, p.Lag, c(p.InFlight), c(p.Acquired), c(p.Available))
	}
	if got, want := counts(describe(admin).Partitions[0]), "start 0 lag 10 in-flight 10 acquired 10 available 0"; got != want {
		t.Fatalf("holding ten records: %s, want %s", got, want)
	}
	ack(0, 1, 1) // accept
	ack(2, 4, 2) // release
	d := describe(admin)
	if got, want := counts(d.Partitions[0]), "start 2 lag 8 in-flight 8 acquired 5 available 3"; got != want {
		t.Fatalf("after accepting two and releasing three: %s, want %s", got, want)
	}
	if d.InFlightError != "" {
		t.Fatalf("in-flight error with the node's admin address: %s", d.InFlightError)
	}
	text := cliOK(t, with("group", "describe", group, "--admin", admin)...)
	for _, want := range []string{"IN-FLIGHT", "ACQUIRED", "AVAILABLE"} {
		if !strings.Contains(text, want) {
			t.Errorf("describe lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, fmt.Sprintf("%s  0          2               10              8    8          5         3", topic)) {
		t.Errorf("describe's partition line:\n%s", text)
	}

	// No admin listener there: the counts are unknown, and why is said.
	nowhere := "127.0.0.1:1"
	d = describe(nowhere)
	if p := d.Partitions[0]; p.InFlight != nil || p.CurrentOffset != 2 || !strings.Contains(d.InFlightError, nowhere) {
		t.Fatalf("with no admin listener: %s, error %q", counts(p), d.InFlightError)
	}
	text = cliOK(t, with("group", "describe", group, "--admin", nowhere)...)
	if !strings.Contains(text, "unknown: ") || !strings.Contains(text, "-          -         -") {
		t.Errorf("describe with no admin listener:\n%s", text)
	}
}
