package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives one group's state machine directly, with a fake clock
// and an in-memory persist: no goroutine, no timer, no disk.
type harness struct {
	t       *testing.T
	g       *group
	cfg     Config
	written []record
	next    int64
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, cfg: Config{MinSessionTimeout: time.Second}}
	h.cfg.setDefaults()
	h.g = newGroup("g", &h.cfg, func(recs []record) (int64, error) {
		h.written = append(h.written, recs...)
		h.next += int64(len(recs))
		return h.next - 1, nil
	})
	h.g.now = time.Unix(1000, 0)
	return h
}

func (h *harness) advance(d time.Duration) {
	h.g.now = h.g.now.Add(d)
	h.g.tick()
}

// pendingReply captures an answer the state machine may give later.
type pendingReply struct {
	resp kmsg.Response
	hw   int64
	n    int
}

func (p *pendingReply) send(resp kmsg.Response, hw int64) { p.resp, p.hw = resp, hw; p.n++ }

func (h *harness) join(version int16, memberID string, instance *string, meta string) *pendingReply {
	p := &pendingReply{}
	req := kmsg.NewJoinGroupRequest()
	req.Version = version
	h.g.join(joinRequest{
		version: version, memberID: memberID, instanceID: instance, clientID: "c", protocolType: "consumer",
		protocols:      []protocol{{name: "range", metadata: []byte(meta)}},
		sessionTimeout: 3 * time.Second, rebalanceTimeout: 5 * time.Second,
	}, &waiter{resp: req.ResponseKind(), send: p.send})
	return p
}

func (h *harness) sync(memberID string, gen int32, assign map[string][]byte) *pendingReply {
	p := &pendingReply{}
	req := kmsg.NewSyncGroupRequest()
	h.g.sync(syncRequest{memberID: memberID, generation: gen, assignments: assign}, &waiter{resp: req.ResponseKind(), send: p.send})
	return p
}

func joinResp(t *testing.T, p *pendingReply) *kmsg.JoinGroupResponse {
	t.Helper()
	if p.n != 1 {
		t.Fatalf("join answered %d times", p.n)
	}
	return p.resp.(*kmsg.JoinGroupResponse)
}

func syncResp(t *testing.T, p *pendingReply) *kmsg.SyncGroupResponse {
	t.Helper()
	if p.n != 1 {
		t.Fatalf("sync answered %d times", p.n)
	}
	return p.resp.(*kmsg.SyncGroupResponse)
}

// joinNew joins a new dynamic member through KIP-394 and returns its id and
// the held join.
func (h *harness) joinNew(meta string) (string, *pendingReply) {
	first := joinResp(h.t, h.join(4, "", nil, meta))
	if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
		h.t.Fatalf("first join: code %d id %q, want MEMBER_ID_REQUIRED with an id", first.ErrorCode, first.MemberID)
	}
	return first.MemberID, h.join(4, first.MemberID, nil, meta)
}

func TestJoinSyncStable(t *testing.T) {
	h := newHarness(t)
	a, ja := h.joinNew("a")
	ra := joinResp(t, ja)
	if ra.ErrorCode != 0 || ra.Generation != 1 || ra.LeaderID != a || len(ra.Members) != 1 {
		t.Fatalf("join a: %+v", ra)
	}
	sa := syncResp(t, h.sync(a, 1, map[string][]byte{a: []byte("A1")}))
	if sa.ErrorCode != 0 || string(sa.MemberAssignment) != "A1" || h.g.state != StateStable {
		t.Fatalf("sync a: %+v state %v", sa, h.g.state)
	}
	if len(h.written) != 1 {
		t.Fatalf("leader sync wrote %d records, want the group metadata", len(h.written))
	}
	if k, _ := decodeKey(h.written[0].key); k.kind != kindGroup {
		t.Fatalf("leader sync wrote %+v", k)
	}

	// A second member: the join is held until a rejoins.
	b, jb := h.joinNew("b")
	if jb.n != 0 || h.g.state != StatePreparingRebalance {
		t.Fatalf("b's join answered early (%d) or state %v", jb.n, h.g.state)
	}
	if code := h.g.heartbeat(a, nil, 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("a's heartbeat during the rebalance: %d", code)
	}
	ja2 := h.join(4, a, nil, "a")
	ra2, rb := joinResp(t, ja2), joinResp(t, jb)
	if ra2.Generation != 2 || rb.Generation != 2 || ra2.LeaderID != a || len(ra2.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("generation 2: a %+v b %+v", ra2, rb)
	}
	// b's sync waits for the leader's.
	sb := h.sync(b, 2, nil)
	if sb.n != 0 {
		t.Fatal("follower sync answered before the leader's")
	}
	if code := syncResp(t, h.sync(b, 1, nil)).ErrorCode; code != kerr.IllegalGeneration.Code {
		t.Fatalf("stale generation sync: %d", code)
	}
	sa2 := syncResp(t, h.sync(a, 2, map[string][]byte{a: []byte("A2"), b: []byte("B2")}))
	if string(sa2.MemberAssignment) != "A2" || string(syncResp(t, sb).MemberAssignment) != "B2" {
		t.Fatal("assignments not delivered")
	}
	if h.g.state != StateStable {
		t.Fatalf("state %v", h.g.state)
	}
}

func TestSessionTimeoutRebalances(t *testing.T) {
	h := newHarness(t)
	a, ja := h.joinNew("a")
	joinResp(t, ja)
	syncResp(t, h.sync(a, 1, map[string][]byte{a: []byte("A")}))
	b, jb := h.joinNew("b")
	joinResp(t, h.join(4, a, nil, "a"))
	joinResp(t, jb)
	syncResp(t, h.sync(a, 2, map[string][]byte{a: []byte("A"), b: []byte("B")}))

	// a heartbeats, b is silent: after b's session a rebalance starts.
	for range 5 {
		h.advance(time.Second)
		if code := h.g.heartbeat(a, nil, h.g.generation); code != 0 && code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat: %d", code)
		}
	}
	if _, ok := h.g.members[b]; ok {
		t.Fatal("b outlived its session")
	}
	if h.g.state != StatePreparingRebalance {
		t.Fatalf("state %v after b expired", h.g.state)
	}
	r := joinResp(t, h.join(4, a, nil, "a"))
	if r.Generation != 3 || len(r.Members) != 1 {
		t.Fatalf("rejoin after expiry: %+v", r)
	}
	// The leader never syncs: after the rebalance timeout it is removed and
	// the group ends Empty.
	h.advance(6 * time.Second)
	if h.g.state != StateEmpty || len(h.g.members) != 0 {
		t.Fatalf("state %v with %d members after the sync deadline", h.g.state, len(h.g.members))
	}
}

func TestStaticMemberRejoinWithoutRebalance(t *testing.T) {
	h := newHarness(t)
	inst := "instance-1"
	r := joinResp(t, h.join(5, "", &inst, "a"))
	if r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("static join (no MEMBER_ID_REQUIRED for static members): %+v", r)
	}
	old := r.MemberID
	syncResp(t, h.sync(old, 1, map[string][]byte{old: []byte("A")}))

	// Restart: same instance id, no member id, same protocols.
	r2 := joinResp(t, h.join(5, "", &inst, "a"))
	if r2.ErrorCode != 0 || r2.Generation != 1 || r2.MemberID == old || h.g.state != StateStable ||
		r2.LeaderID != old || !r2.SkipAssignment {
		t.Fatalf("static rejoin: %+v, state %v", r2, h.g.state)
	}
	if s := syncResp(t, h.sync(r2.MemberID, 1, nil)); s.ErrorCode != 0 || string(s.MemberAssignment) != "A" {
		t.Fatalf("static rejoin keeps its assignment: %+v", s)
	}
	// The old incarnation is fenced.
	if code := h.g.heartbeat(old, &inst, 1); code != kerr.FencedInstanceID.Code {
		t.Fatalf("old incarnation heartbeat: %d, want FENCED_INSTANCE_ID", code)
	}
	// New metadata for the same protocol does not rebalance either (Kafka
	// looks at the selected protocol only); the member's metadata is the new one.
	r3 := joinResp(t, h.join(5, "", &inst, "changed"))
	if r3.Generation != 1 || r3.LeaderID != r2.MemberID || !r3.SkipAssignment {
		t.Fatalf("static rejoin with new metadata: %+v", r3)
	}
	if md, _ := h.g.members[r3.MemberID].metadataFor("range"); string(md) != "changed" {
		t.Fatalf("metadata %q", md)
	}
}

// commitApplied commits and applies the commit as its replication would.
func commitApplied(g *group, cr commitRequest) ([]int16, int64) {
	codes, written, hw := g.commit(cr)
	g.applyReplicated(written)
	return codes, hw
}

func TestOffsetCommitChecks(t *testing.T) {
	h := newHarness(t)
	tp := topicPartition{"t", 0}
	// A simple commit to a group without members.
	codes, hw := commitApplied(h.g, commitRequest{generation: -1, offsets: []commitOffset{{tp: tp, offset: 5}}})
	if codes[0] != 0 || hw != 0 || h.g.offsets[tp].offset != 5 {
		t.Fatalf("simple commit: %v hw %d", codes, hw)
	}
	a, ja := h.joinNew("a")
	joinResp(t, ja)
	// CompletingRebalance: REBALANCE_IN_PROGRESS.
	if codes, _ := commitApplied(h.g, commitRequest{memberID: a, generation: 1, offsets: []commitOffset{{tp: tp, offset: 6}}}); codes[0] != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit while completing: %v", codes)
	}
	syncResp(t, h.sync(a, 1, map[string][]byte{a: nil}))
	for _, tc := range []struct {
		member string
		gen    int32
		want   int16
	}{
		{"nobody", 1, kerr.UnknownMemberID.Code},
		{a, 7, kerr.IllegalGeneration.Code},
		{"", -1, kerr.UnknownMemberID.Code}, // a simple commit to an active group
		{a, 1, 0},
	} {
		codes, _ := commitApplied(h.g, commitRequest{memberID: tc.member, generation: tc.gen, offsets: []commitOffset{{tp: tp, offset: 9}}})
		if codes[0] != tc.want {
			t.Errorf("commit by %q gen %d: %d, want %d", tc.member, tc.gen, codes[0], tc.want)
		}
	}
	if h.g.offsets[tp].offset != 9 {
		t.Fatalf("offset %d", h.g.offsets[tp].offset)
	}
	// A commit during PreparingRebalance from the current generation is kept.
	_, jb := h.joinNew("b")
	_ = jb
	if codes, _ := commitApplied(h.g, commitRequest{memberID: a, generation: 1, offsets: []commitOffset{{tp: tp, offset: 10}}}); codes[0] != 0 {
		t.Fatalf("commit while preparing: %v", codes)
	}
	big := make([]byte, h.cfg.MaxMetadataBytes+1)
	if codes, _ := commitApplied(h.g, commitRequest{memberID: a, generation: 1, offsets: []commitOffset{{tp: tp, offset: 11, metadata: string(big)}}}); codes[0] != kerr.OffsetMetadataTooLarge.Code {
		t.Fatalf("large metadata: %v", codes)
	}
}

func TestLeaveAndDelete(t *testing.T) {
	h := newHarness(t)
	a, ja := h.joinNew("a")
	joinResp(t, ja)
	syncResp(t, h.sync(a, 1, map[string][]byte{a: nil}))
	commitApplied(h.g, commitRequest{memberID: a, generation: 1, offsets: []commitOffset{{tp: topicPartition{"t", 0}, offset: 3}}})
	if code, _ := h.g.deleteGroup(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of an active group: %d", code)
	}
	if codes, _ := h.g.leave([]leaving{{memberID: a}, {memberID: "nobody"}}); codes[0] != 0 || codes[1] != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %v", codes)
	}
	if h.g.state != StateEmpty || h.g.generation != 2 {
		t.Fatalf("after the last member left: %v gen %d", h.g.state, h.g.generation)
	}
	before := len(h.written)
	if code, _ := h.g.deleteGroup(); code != 0 || h.g.state != StateDead {
		t.Fatalf("delete: %d %v", code, h.g.state)
	}
	tomb := h.written[before:]
	if len(tomb) != 2 || tomb[0].value != nil || tomb[1].value != nil {
		t.Fatalf("delete wrote %d records, want 2 tombstones", len(tomb))
	}
}
