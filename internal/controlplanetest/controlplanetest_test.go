package controlplanetest

import (
	"context"
	"testing"
	"time"
)

// TestOpen: the Store lists broker 1 at the port given, and the RemoteLog
// answers (no segments of a topic yet).
func TestOpen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, rl := Open(t, ctx, 9093)
	bs := st.Brokers()
	if len(bs) != 1 || bs[0].NodeID != 1 || bs[0].Host != "127.0.0.1" || bs[0].Port != 9093 {
		t.Fatalf("brokers %+v, want node 1 at 127.0.0.1:9093", bs)
	}
	top, err := st.CreateTopic(ctx, "t", 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if segs := rl.ListRemoteSegments(top.ID, 0); len(segs) != 0 {
		t.Fatalf("remote segments of a new topic: %v", segs)
	}
}
