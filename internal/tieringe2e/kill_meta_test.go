package tieringe2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/restore"
)

// readRemoteLog reads the remote segment metadata of a child node from its
// embedded NATS server (the control plane itself, not the node's cache):
// it opens a Store and a RemoteLog on their own connection, waits for the
// initial load, and closes them again. brokerTTL is the node's
// --broker-session-timeout, so that opening the Store sees the broker
// bucket's settings unchanged. The returned RemoteLog's cache stays
// readable after its Close.
func readRemoteLog(t testing.TB, natsAddr string, brokerTTL time.Duration) *controlplane.RemoteLog {
	t.Helper()
	nc, err := nats.Connect("nats://"+natsAddr, nats.Name("tieringe2e-meta-reader"), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connect to the node's NATS at %s: %v", natsAddr, err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	st, err := controlplane.Open(ctx, nc, controlplane.StoreConfig{BrokerTTL: brokerTTL, Logger: testnode.Logger()})
	if err != nil {
		t.Fatalf("open the node's control plane: %v", err)
	}
	defer st.Close()
	rl, err := controlplane.OpenRemoteLog(ctx, st)
	if err != nil {
		t.Fatalf("open the node's remote log: %v", err)
	}
	rl.Close()
	return rl
}

// bucketMatchesRemoteLog describes the first mismatch ("" when none)
// between the bucket, listed through minio-go, and the objects of rl's
// records, every record having to be CopyFinished.
func bucketMatchesRemoteLog(t testing.TB, rl *controlplane.RemoteLog, mc *minio.Client, bucket string) string {
	t.Helper()
	referenced := map[string]bool{}
	for _, id := range rl.RemoteTopicIDs() {
		for _, p := range rl.RemotePartitions(id) {
			for _, s := range rl.ListRemoteSegments(id, p) {
				if s.State != controlplane.CopyFinished {
					return fmt.Sprintf("segment %s [%d,%d] is %v", s.SegmentID, s.BaseOffset, s.EndOffset, s.State)
				}
				for _, k := range s.Objects {
					referenced[k] = true
				}
			}
		}
	}
	for _, k := range rl.QuarantinedObjects() {
		referenced[k] = true // in quarantine: listed, kept until purged
	}
	listed := slices.DeleteFunc(listBucket(t, mc, bucket), func(k string) bool {
		// The format marker and topic descriptors (package restore) are
		// no segment's: no record references them.
		return strings.HasPrefix(k, restore.MetaPrefix(""))
	})
	for _, k := range listed {
		if !referenced[k] {
			return "orphan object " + k
		}
		delete(referenced, k)
	}
	for k := range referenced {
		return "referenced object missing from the bucket: " + k
	}
	if len(listed) == 0 {
		return "the bucket is empty"
	}
	return ""
}
