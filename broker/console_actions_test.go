package broker_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestAdminRolesAndConsoleActions runs a node whose tokens file holds an
// admin token (no role: the old format) and a read-only one, and asks it
// with real HTTP: the read-only token reads (metrics, the console's JSON,
// its session says read) and is refused every write (the console's
// actions, a decommission) with 403 saying the token is read-only; the
// admin token runs the actions: a preferred election answers per
// partition, an offset reset of an inactive group commits what its dry run
// planned (checked with a Kafka client), and one of a group with a member
// is refused with 409 naming the group's state.
func TestAdminRolesAndConsoleActions(t *testing.T) {
	const adminTok, readTok = "admin-token-0123456789abcdef", "read-token-0123456789abcdef"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	writeRenamed(t, tokens, "# ops\n"+adminTok+"\n"+readTok+" read\n")
	n := testnode.Start(t, filepath.Join(dir, "node"), func(c *config.Broker) { c.AdminAuthTokensFile = tokens })
	ctx := ctxT(t, 90*time.Second)
	base := "http://" + n.AdminAddr()
	do := func(method, path, token string, body any) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "events"
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte("v")})
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 10, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 20, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "idle", offs); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}

	// Reads: both tokens.
	for _, tok := range []string{adminTok, readTok} {
		for _, path := range []string{"/metrics", adminapi.ConsoleTopicsPath, "/console/"} {
			if code, body := do(http.MethodGet, path, tok, nil); code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
		}
	}
	for tok, want := range map[string]adminapi.ConsoleSession{adminTok: {Role: "admin", CanWrite: true}, readTok: {Role: "read"}} {
		code, body := do(http.MethodGet, adminapi.ConsoleSessionPath, tok, nil)
		var s adminapi.ConsoleSession
		if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil || s.Role != want.Role || s.CanWrite != want.CanWrite {
			t.Fatalf("session: %d %s; want role %s", code, body, want.Role)
		}
	}

	// Writes with the read-only token: 403, saying why; nothing changed.
	reset := adminapi.ConsoleResetRequest{Group: "idle", Topic: topic, To: "earliest"}
	for path, body := range map[string]any{
		adminapi.ConsoleElectPreferredPath: adminapi.ConsoleElectRequest{Topic: topic},
		adminapi.ConsoleRebalancePath:      adminapi.ConsoleRebalanceRequest{},
		adminapi.ConsoleResetOffsetsPath:   reset,
		adminapi.DecommissionPath:          adminapi.DrainRequest{Brokers: []int32{1}},
	} {
		if code, msg := do(http.MethodPost, path, readTok, body); code != http.StatusForbidden || !strings.Contains(msg, "read-only") {
			t.Fatalf("POST %s with the read-only token: %d %q; want 403 saying read-only", path, code, msg)
		}
	}
	fetched, err := adm.FetchOffsets(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup(topic, 0); o.At != 10 {
		t.Fatalf("after the refused reset: partition 0 at %d, want 10", o.At)
	}

	// Writes with the admin token.
	code, body := do(http.MethodPost, adminapi.ConsoleElectPreferredPath, adminTok, adminapi.ConsoleElectRequest{Topic: topic})
	var er adminapi.ConsoleElectResult
	if err := json.Unmarshal([]byte(body), &er); code != http.StatusOK || err != nil || len(er.Results) != 2 ||
		!strings.Contains(er.Results[0].Error, "ELECTION_NOT_NEEDED") {
		t.Fatalf("elect preferred: %d %s; want two partitions, ELECTION_NOT_NEEDED (one node leads)", code, body)
	}
	if code, body := do(http.MethodPost, adminapi.ConsoleElectPreferredPath, adminTok, adminapi.ConsoleElectRequest{Topic: "nope"}); code != http.StatusNotFound {
		t.Fatalf("elect preferred of a missing topic: %d %s", code, body)
	}
	reset.To, reset.Offset, reset.DryRun = "offset", 30, true
	code, body = do(http.MethodPost, adminapi.ConsoleResetOffsetsPath, adminTok, reset)
	var rr adminapi.ConsoleResetResult
	if err := json.Unmarshal([]byte(body), &rr); code != http.StatusOK || err != nil || !rr.DryRun || len(rr.Partitions) != 2 ||
		rr.Partitions[0].OldOffset != 10 || rr.Partitions[0].NewOffset != 30 || rr.Partitions[1].OldOffset != 20 || rr.Partitions[1].NewOffset != 30 {
		t.Fatalf("reset dry run: %d %s", code, body)
	}
	if fetched, err = adm.FetchOffsets(ctx, "idle"); err != nil {
		t.Fatal(err)
	}
	if o, _ := fetched.Lookup(topic, 0); o.At != 10 {
		t.Fatalf("after the dry run: partition 0 at %d, want 10", o.At)
	}
	reset.DryRun = false
	if code, body = do(http.MethodPost, adminapi.ConsoleResetOffsetsPath, adminTok, reset); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	if fetched, err = adm.FetchOffsets(ctx, "idle"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if o, _ := fetched.Lookup(topic, p); o.At != 30 {
			t.Fatalf("after the reset: partition %d at %d, want 30", p, o.At)
		}
	}

	// A group with a member: refused with its state.
	live, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ConsumerGroup("live"), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := proctest.Poll(30*time.Second, 50*time.Millisecond, func() bool {
		d, err := adm.DescribeGroups(ctx, "live")
		return err == nil && d["live"].State == "Stable" && len(d["live"].Members) == 1
	}); err != nil {
		live.PollRecords(ctx, 1)
		t.Fatalf("the live group did not stabilise: %v", err)
	}
	code, body = do(http.MethodPost, adminapi.ConsoleResetOffsetsPath, adminTok, adminapi.ConsoleResetRequest{Group: "live", Topic: topic, To: "latest"})
	if code != http.StatusConflict || !strings.Contains(body, "Stable") || !strings.Contains(body, "1 members") {
		t.Fatalf("reset of a group with a member: %d %q; want 409 naming its state", code, body)
	}
}
