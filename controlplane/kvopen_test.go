package controlplane

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestSideBucketsKeepOneFileRevision: the side buckets (producer ids,
// SCRAM credentials, delegation tokens) name only their bucket and
// replicas and rely on OpenBucket for one history entry on file storage.
func TestSideBucketsKeepOneFileRevision(t *testing.T) {
	srv := startNATS(t)
	nc := connect(t, srv)
	ctx := testCtx(t)
	if _, err := OpenProducerIDs(ctx, nc, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSCRAMCredentials(ctx, nc, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDelegationTokens(ctx, nc, 1); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"shale_producer_ids", "shale_scram_credentials", "shale_delegation_tokens"} {
		kv, err := js.KeyValue(ctx, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok {
			t.Fatalf("%s: status %T", name, st)
		}
		if h, s, r := bs.History(), bs.StreamInfo().Config.Storage, bs.StreamInfo().Config.Replicas; h != 1 || s != jetstream.FileStorage || r != 1 {
			t.Fatalf("%s: history %d, storage %v, replicas %d; want 1, file, 1", name, h, s, r)
		}
	}
}
