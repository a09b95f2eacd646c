package partition

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/invariants"
	"github.com/shale-io/shale/segment/batch"
)

// TestAppendHandsDownStampedHeader drives the append paths that hand a
// parsed header down with its batch (batch.Checked): the leader's, with
// LogAppendTime, recompression, both and neither, its transaction
// markers, and the follower's. With the shale_invariants tag every append
// checks that the header handed down is a fresh parse of the bytes the log
// wrote (checkHandedDown). Either way, producer state built from the
// handed-down headers must equal producer state replayed from the log's
// bytes and a follower's, built from the same bytes fetched.
func TestAppendHandsDownStampedHeader(t *testing.T) {
	clock := time.UnixMilli(1_700_000_000_000)
	now := func() time.Time { return clock }
	for _, cfg := range []map[string]string{
		{"message.timestamp.type": "LogAppendTime"},
		{"compression.type": "zstd"},
		{"compression.type": "lz4", "message.timestamp.type": "LogAppendTime"},
		nil,
	} {
		t.Run(fmt.Sprint(cfg), func(t *testing.T) {
			dir := t.TempDir()
			leader := openTest(t, dir+"/leader", cfg, now)
			defer leader.Close()
			follower := openFollower(t, dir+"/follower", cfg, now)
			defer follower.Close()

			for i := range 6 {
				o := idem(9, int32(3*i), clock.UnixMilli()-int64(100-i))
				o.Codec = batch.CodecGzip
				if _, err := leader.AppendLeader(build(t, o, 3)); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			txn := idem(11, 0, clock.UnixMilli()-50)
			txn.ProducerEpoch, txn.Transactional = 2, true
			if _, err := leader.AppendLeader(build(t, txn, 2)); err != nil {
				t.Fatal(err)
			}
			if _, err := leader.AppendTxnMarker(TxnMarker{ProducerID: 11, ProducerEpoch: 2, Commit: true, CoordinatorEpoch: 1}); err != nil {
				t.Fatal(err)
			}

			leo := leader.Log().LogEndOffset()
			b, err := leader.Log().ReadBytes(0, 1<<20, leo, true)
			if err != nil {
				t.Fatal(err)
			}
			leader.appendMu.Lock()
			live := leader.producers.Encode()
			replayed := NewProducerState()
			err = leader.replayProducers(replayed, 0)
			leader.appendMu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(live, replayed.Encode()) {
				t.Fatal("producer state from the handed-down headers differs from a replay of the log's bytes")
			}

			if err := follower.AppendFollower(b, leo); err != nil {
				t.Fatal(err)
			}
			if follower.Log().LogEndOffset() != leo {
				t.Fatalf("follower log end %d, leader's %d", follower.Log().LogEndOffset(), leo)
			}
			follower.appendMu.Lock()
			fromFollower := follower.producers.Encode()
			follower.appendMu.Unlock()
			if !bytes.Equal(live, fromFollower) {
				t.Fatal("the follower's producer state differs from the leader's")
			}
		})
	}
}

// TestCheckHandedDownCatchesAMismatch pins that the invariant has teeth: a
// header that does not match its bytes panics in shale_invariants builds.
func TestCheckHandedDownCatchesAMismatch(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("needs the shale_invariants build tag")
	}
	r := openTest(t, t.TempDir(), nil, nil)
	defer r.Close()
	b := build(t, batch.NoProducer(), 2)
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	r.checkHandedDown([]batch.Checked{{Header: h, Raw: b}})
	h.MaxTimestamp++ // as if a stamper had changed the bytes but not the header
	defer func() {
		if s, _ := recover().(string); !strings.Contains(s, "handed down with header") {
			t.Fatalf("a stale header: recovered %q", s)
		}
	}()
	r.checkHandedDown([]batch.Checked{{Header: h, Raw: b}})
	t.Fatal("a stale header passed the check")
}
