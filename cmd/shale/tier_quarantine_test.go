package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/restore"
)

// TestTierQuarantineVerbs: on a node with a filesystem bucket, retention
// that deletes a tiered topic's remote segments puts them in quarantine
// (`shale tier quarantine list`); consumers no longer see those records;
// `restore` is refused while retention.ms would delete them again, and
// once it is raised brings every record back from offset 0 (`shale
// consume` reads them again); a short remote.delete.grace.ms then lets the
// controller purge what retention deletes next, and the bucket holds only
// objects the metadata references.
func TestTierQuarantineVerbs(t *testing.T) {
	dir := t.TempDir()
	n := testnode.Start(t, dir, testnode.WithTiering(100*time.Millisecond))
	bs, admin := []string{"--bootstrap", n.KafkaAddr()}, []string{"--admin", n.AdminAddr()}
	cliOK(t, append([]string{"topic", "create", "q", "-p", "1", "-r", "1", "-c", "remote.storage.enable=true",
		"-c", "segment.bytes=4096", "-c", "local.retention.bytes=1", "-c", "remote.delete.grace.ms=3600000"}, bs...)...)

	const total = 300
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("q"), kgo.ProducerBatchMaxBytes(1500),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, 60*time.Second)
	for i := range total {
		cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "record-%03d-%s", i, strings.Repeat("x", 40))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var tiered adminapi.TierPartitionStatus
	poll(t, "every closed segment uploaded and deleted locally", func() bool {
		var st []adminapi.TierStatus
		if err := json.Unmarshal([]byte(cliOK(t, append([]string{"tier", "status", "--topic", "q", "--output", "json"}, admin...)...)), &st); err != nil || len(st[0].Partitions) != 1 {
			return false
		}
		tiered = st[0].Partitions[0]
		return tiered.RemoteSegments >= 3 && tiered.UploadLagSegments == 0 && tiered.LocalLogStartOffset > 0
	})
	all := consumeAll(t, bs)
	if len(all) != total || all[0] != "0 record-000" {
		t.Fatalf("consumed %d records before retention, first %q", len(all), all[0])
	}

	cliOK(t, append([]string{"topic", "alter-config", "q", "--set", "retention.ms=1"}, bs...)...)
	var q adminapi.Quarantine
	poll(t, "retention's deletes in quarantine", func() bool {
		q = quarantineList(t, admin)
		return len(q.Entries) == tiered.RemoteSegments
	})
	for _, e := range q.Entries {
		if e.Reason != "retention" || e.State != "quarantined" || e.Topic != "q" {
			t.Fatalf("entry %+v", e)
		}
	}
	if got := consumeAll(t, bs); len(got) >= total {
		t.Fatalf("consumed %d records after retention", len(got))
	}
	if out := cliOK(t, append([]string{"tier", "quarantine", "list", "--topic", "q"}, admin...)...); !strings.Contains(out, "retention") ||
		!strings.Contains(out, "PURGE-AFTER") {
		t.Fatalf("list:\n%s", out)
	}

	// Refused while retention.ms would delete them again.
	out, errOut, code := cliRun(t, append([]string{"tier", "quarantine", "restore", "--topic", "q"}, admin...)...)
	if code != 1 || !strings.Contains(out, "refused") || !strings.Contains(out, "retention.ms") {
		t.Fatalf("restore under retention.ms=1: exit %d\n%s%s", code, out, errOut)
	}
	cliOK(t, append([]string{"topic", "alter-config", "q", "--set", "retention.ms=-1"}, bs...)...)
	out = cliOK(t, append([]string{"tier", "quarantine", "restore", "--topic", "q"}, admin...)...)
	if strings.Count(out, "restored") != tiered.RemoteSegments {
		t.Fatalf("restore:\n%s", out)
	}
	poll(t, "the log start back at 0", func() bool {
		got := consumeAll(t, bs)
		return len(got) == total && got[0] == "0 record-000"
	})
	if got := consumeAll(t, bs); strings.Join(got, ",") != strings.Join(all, ",") {
		t.Fatal("records after the restore differ from those before")
	}

	// Past a short grace, the controller purges; no orphan is left.
	cliOK(t, append([]string{"topic", "alter-config", "q", "--set", "retention.ms=1", "--set", "remote.delete.grace.ms=500"}, bs...)...)
	poll(t, "the purge past the grace", func() bool {
		rl := n.RemoteLog()
		top, _ := n.Store().Topic("q")
		return len(quarantineList(t, admin).Entries) == 0 && n.Tiering().Stats().QuarantinePurged >= uint64(tiered.RemoteSegments) &&
			len(rl.ListRemoteSegments(top.ID, 0)) == 0
	})
	checkBucketReferenced(t, n, filepath.Join(dir, "bucket"))
}

func quarantineList(t *testing.T, admin []string) adminapi.Quarantine {
	t.Helper()
	var q adminapi.Quarantine
	if err := json.Unmarshal([]byte(cliOK(t, append([]string{"tier", "quarantine", "list", "--topic", "q", "--output", "json"}, admin...)...)), &q); err != nil {
		t.Fatal(err)
	}
	return q
}

// consumeAll reads topic q from its log start to its end, as "offset value"
// lines with the value cut before its filler.
func consumeAll(t *testing.T, bs []string) []string {
	t.Helper()
	out := cliOK(t, append([]string{"consume", "q", "--offset", "start", "--until", "end", "--format", "%o %v\n"}, bs...)...)
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if v, _, ok := strings.Cut(l, "-x"); ok {
			lines = append(lines, v)
		}
	}
	return lines
}

// checkBucketReferenced fails on a file of the filesystem bucket that no
// remote segment record or quarantine entry references.
func checkBucketReferenced(t *testing.T, n *broker.Node, root string) {
	t.Helper()
	rl := n.RemoteLog()
	ref := map[string]bool{}
	for _, id := range rl.RemoteTopicIDs() {
		for _, p := range rl.RemotePartitions(id) {
			for _, s := range rl.ListRemoteSegments(id, p) {
				for _, k := range s.Objects {
					ref[k] = true
				}
			}
		}
	}
	for _, k := range rl.QuarantinedObjects() {
		ref[k] = true
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(filepath.Base(rel), ".") {
			return nil
		}
		if key := filepath.ToSlash(rel); !ref[key] && !strings.HasPrefix(key, restore.MetaPrefix("")) {
			// The format marker and topic descriptors (package restore)
			// are no segment's: no record references them.
			t.Errorf("orphan object %s", rel)
		}
		return nil
	})
}

func poll(t *testing.T, what string, ok func() bool) {
	t.Helper()
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, ok); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
