package tieringe2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/internal/testnode"
)

// TestDeleteRecordsUndoneAfterAFailoverS3: on a tiered RF=3 topic in a
// versitygw bucket, DeleteRecords puts the remote segments below the new
// log start in quarantine (remote.delete.grace.ms, one day by default);
// the leader goes; a restore asked of a surviving node is carried out by
// the new leader: EARLIEST is 0 again and a franz-go consumer reads every
// record from 0. A purge then deletes what a later DeleteRecords
// quarantined, and the bucket holds exactly what the metadata references.
func TestDeleteRecordsUndoneAfterAFailoverS3(t *testing.T) {
	env := startS3(t)
	nodes, _ := testnode.StartCluster(t, t.TempDir(), 3, testnode.WithS3(env.srv.Endpoint, env.bucket),
		testnode.WithTiering(100*time.Millisecond), testnode.WithSession(3*time.Second))
	ctx := ctxT(t, 3*time.Minute)
	const topic = "undone"
	const n, cut = 20_000, 10_000
	adm := tieredTopicRF3(t, ctx, nodes, topic, n)
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	lid := m.Topics[topic].Partitions[0].Leader
	leader := nodes[lid-1]
	waitTiered(t, leader, topic, 5, cut+1)

	var os kadm.Offsets
	os.AddOffset(topic, 0, cut, -1)
	if _, err := adm.DeleteRecords(ctx, os); err != nil {
		t.Fatal(err)
	}
	survivor := nodes[lid%3]
	admin := adminapi.Client{Timeout: 30 * time.Second}
	var quarantined int
	waitFor(t, 60*time.Second, "the segments below the log start in quarantine", func() bool {
		for _, s := range finishedSegments(leader, topic) {
			if s.EndOffset < cut {
				return false
			}
		}
		q, err := admin.QuarantineList(ctx, survivor.AdminAddr(), topic)
		quarantined = len(q.Entries)
		return err == nil && quarantined > 0
	})
	q, _ := admin.QuarantineList(ctx, survivor.AdminAddr(), topic)
	for _, e := range q.Entries {
		if e.Reason != "delete_records" || e.EndOffset >= cut {
			t.Fatalf("entry %+v", e)
		}
	}

	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.Close(cctx); err != nil {
		t.Logf("close the leader: %v", err)
	}
	adm2 := kadm.NewClient(newClient(t, survivor.KafkaAddr()))
	var newLeader int32
	waitFor(t, 60*time.Second, "a new leader", func() bool {
		m, err := adm2.Metadata(ctx, topic)
		if err != nil || len(m.Topics[topic].Partitions) == 0 {
			return false
		}
		newLeader = m.Topics[topic].Partitions[0].Leader
		return newLeader > 0 && newLeader != lid
	})
	res, err := admin.QuarantineRestore(ctx, survivor.AdminAddr(), adminapi.QuarantineRequest{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range res.Entries {
		if e.Result != "restored" {
			t.Fatalf("restore on the new leader: %+v", e)
		}
	}
	if len(res.Entries) != quarantined {
		t.Fatalf("%d restored, %d quarantined", len(res.Entries), quarantined)
	}
	addr := nodes[newLeader-1].KafkaAddr()
	waitFor(t, 30*time.Second, "EARLIEST back at 0", func() bool { return listOffset(t, addr, topic, -2) == 0 })
	consumeFranz(t, addr, topic, 0, n)

	// Deleted again, then purged at once: nothing left but what the
	// metadata references.
	if _, err := adm2.DeleteRecords(ctx, os); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the segments quarantined again", func() bool {
		q, err := admin.QuarantineList(ctx, survivor.AdminAddr(), topic)
		return err == nil && len(q.Entries) == quarantined
	})
	if p, err := admin.QuarantinePurge(ctx, survivor.AdminAddr(), adminapi.QuarantineRequest{Topic: topic}); err != nil || len(p.Entries) != quarantined {
		t.Fatalf("purge: %+v %v", p, err)
	}
	mc := minioClient(t, env.srv.Endpoint)
	waitBucketMatches(t, 30*time.Second, survivor, mc, env.bucket)
	consumeFranz(t, addr, topic, cut, n)
}
