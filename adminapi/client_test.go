package adminapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/internal/proctest"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ node, path, topic, want string }{
		{"127.0.0.1:9644", adminapi.TierStatusPath, "", "http://127.0.0.1:9644/v1/tier/status"},
		{"localhost:9644", adminapi.TierStatusPath, "", "http://localhost:9644/v1/tier/status"},
		{"http://h:1/", adminapi.ReplicationStatusPath, "", "http://h:1/v1/replication/status"},
		{"https://h:1/prefix", adminapi.ReplicationStatusPath, "a b&c", "https://h:1/prefix/v1/replication/status?topic=a+b%26c"},
	} {
		if got := adminapi.URL(c.node, c.path, c.topic); got != c.want {
			t.Errorf("URL(%q, %q, %q) = %q, want %q", c.node, c.path, c.topic, got, c.want)
		}
	}
}

// TestClient GETs both endpoints from a server that answers as a node
// does, then checks the errors: a status other than 200, bodies that are
// not the endpoint's JSON, a node that does not answer in time.
func TestClient(t *testing.T) {
	var gotTopic string
	bodies := map[string]string{
		adminapi.TierStatusPath:                 `{"node_id":1,"partitions":[{"topic":"t","partition":0,"last_tiered_offset":-1}]}`,
		adminapi.ReplicationStatusPath:          `{"node_id":1,"partitions":[{"topic":"t","role":"follower","leader":-1}],"fetchers":[]}`,
		"/bad" + adminapi.TierStatusPath:        `{}`,
		"/bad" + adminapi.ReplicationStatusPath: `{"node_id":1,"partitions":[{"topic":"t","role":"boss"}]}`,
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotTopic = r.URL.Query().Get("topic")
		if strings.HasPrefix(r.URL.Path, "/slow/") {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		w.Write([]byte(b))
	}))
	defer srv.Close()
	defer close(release)
	ctx := proctest.Context(t, 30*time.Second)
	var c adminapi.Client
	node := strings.TrimPrefix(srv.URL, "http://")

	ts, err := c.TierStatus(ctx, node, "a b")
	if err != nil || ts.NodeID != 1 || len(ts.Partitions) != 1 || ts.Partitions[0].LastTieredOffset != -1 || gotTopic != "a b" {
		t.Fatalf("tier status: %+v %v (topic %q)", ts, err, gotTopic)
	}
	rs, err := adminapi.Client{HTTP: srv.Client(), Timeout: 10 * time.Second}.ReplicationStatus(ctx, srv.URL, "")
	if err != nil || len(rs.Partitions) != 1 || rs.Partitions[0].Role != adminapi.RoleFollower || rs.Fetchers == nil || gotTopic != "" {
		t.Fatalf("replication status: %+v %v (topic %q)", rs, err, gotTopic)
	}

	// Not 200: ErrHTTPStatus, naming the URL, the status and the body.
	_, err = c.TierStatus(ctx, srv.URL+"/nowhere", "")
	if !errors.Is(err, adminapi.ErrHTTPStatus) || errors.Is(err, adminapi.ErrBadBody) ||
		!strings.Contains(err.Error(), srv.URL+"/nowhere"+adminapi.TierStatusPath) ||
		!strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "no such path") {
		t.Fatalf("404: %v", err)
	}
	// 200 with what is not the endpoint's JSON: ErrBadBody.
	if _, err := c.TierStatus(ctx, srv.URL+"/bad", ""); !errors.Is(err, adminapi.ErrBadBody) || errors.Is(err, adminapi.ErrHTTPStatus) {
		t.Fatalf("tier status without partitions: %v", err)
	}
	if _, err := c.ReplicationStatus(ctx, srv.URL+"/bad", ""); !errors.Is(err, adminapi.ErrBadBody) || !strings.Contains(err.Error(), `"boss"`) {
		t.Fatalf("unknown role: %v", err)
	}
	// A node that does not answer within Timeout.
	_, err = adminapi.Client{Timeout: 50 * time.Millisecond}.ReplicationStatus(ctx, srv.URL+"/slow", "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow node: %v", err)
	}
	// Nothing listening.
	if _, err := c.TierStatus(ctx, "127.0.0.1:1", ""); err == nil || errors.Is(err, adminapi.ErrHTTPStatus) {
		t.Fatalf("no listener: %v", err)
	}
}

func TestDecode(t *testing.T) {
	for _, b := range []string{"", "\x00garbage", `[]`, `{}`, `null`, `{"partitions":null}`, `{"node_id":"one","partitions":[]}`,
		`{"partitions":[{"partition":"x"}]}`, `{"node_id":1,"partitions":[{"topic":"t"`} {
		if st, err := adminapi.DecodeTierStatus(strings.NewReader(b)); !errors.Is(err, adminapi.ErrBadBody) {
			t.Errorf("tier %q: %+v %v", b, st, err)
		}
		if st, err := adminapi.DecodeReplicationStatus(strings.NewReader(b)); !errors.Is(err, adminapi.ErrBadBody) {
			t.Errorf("replication %q: %+v %v", b, st, err)
		}
	}
	if _, err := adminapi.DecodeReplicationStatus(strings.NewReader(`{"partitions":[{"role":""}]}`)); !errors.Is(err, adminapi.ErrBadBody) {
		t.Errorf("empty role: %v", err)
	}
	st, err := adminapi.DecodeReplicationStatus(strings.NewReader(`{"node_id":4,"partitions":[],"fetchers":[]}`))
	if err != nil || st.NodeID != 4 || st.Partitions == nil {
		t.Errorf("empty status: %+v %v", st, err)
	}
	// A body longer than MaxBodyBytes is cut there, so it does not decode.
	long := io.MultiReader(strings.NewReader(`{"node_id":1,"partitions":[],"pad":"`),
		io.LimitReader(repeatReader('a'), adminapi.MaxBodyBytes), strings.NewReader(`"}`))
	if _, err := adminapi.DecodeTierStatus(long); !errors.Is(err, adminapi.ErrBadBody) {
		t.Errorf("body over MaxBodyBytes: %v", err)
	}
}

// repeatReader reads c forever.
type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// FuzzDecodeTierStatus: any body decodes to a status or an ErrBadBody.
func FuzzDecodeTierStatus(f *testing.F) {
	f.Add([]byte(wireTier))
	f.Add([]byte(wireReplication))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := adminapi.DecodeTierStatus(bytes.NewReader(b))
		if err != nil && !errors.Is(err, adminapi.ErrBadBody) {
			t.Fatalf("error %v does not wrap ErrBadBody", err)
		}
		if err == nil && st.Partitions == nil {
			t.Fatal("decoded without a partitions list")
		}
	})
}

// FuzzDecodeReplicationStatus: any body decodes to a status with known
// roles or an ErrBadBody.
func FuzzDecodeReplicationStatus(f *testing.F) {
	f.Add([]byte(wireReplication))
	f.Add([]byte(wireTier))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := adminapi.DecodeReplicationStatus(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, adminapi.ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		if st.Partitions == nil {
			t.Fatal("decoded without a partitions list")
		}
		for _, p := range st.Partitions {
			if p.Role != adminapi.RoleLeader && p.Role != adminapi.RoleFollower {
				t.Fatalf("decoded role %q", p.Role)
			}
			p.UnderReplicatedOrLagging(0)
		}
	})
}

const wireHealth = `{"node_id":1,"time":"2026-12-05T07:00:00Z","kafka_address":"127.0.0.1:9092","nats":{"connected":true,"streams":[{"name":"KV_shale_brokers","replicas":3,"leader":"n1","peers":[{"name":"n2","current":true}]}]},"bucket":{"location":"b","reachable":true},"disk":{"path":"/d","total_bytes":10,"free_bytes":5},"certificates":[]}`

const wireLag = `{"node_id":1,"at":"2026-12-05T07:00:00Z","groups":[{"group":"g","state":"Empty","members":0,"partitions":[{"topic":"t","partition":0,"committed_offset":1,"end_offset":3,"lag":2,"time_lag_seconds":1.5}],"history":[{"at":"2026-12-05T07:00:00Z","lag":2}]}]}`

// FuzzDecodeNodeHealth: any body decodes to a health answer with its
// lists, or an ErrBadBody.
func FuzzDecodeNodeHealth(f *testing.F) {
	f.Add([]byte(wireHealth))
	f.Add([]byte(wireTier))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := adminapi.DecodeNodeHealth(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, adminapi.ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		if h.NATS.Streams == nil || h.Certificates == nil {
			t.Fatal("decoded without its lists")
		}
	})
}

// FuzzDecodeConsumerLag: any body decodes to a sample whose groups all
// have a partitions list, or an ErrBadBody.
func FuzzDecodeConsumerLag(f *testing.F) {
	f.Add([]byte(wireLag))
	f.Add([]byte(wireHealth))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := adminapi.DecodeConsumerLag(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, adminapi.ErrBadBody) {
				t.Fatalf("error %v does not wrap ErrBadBody", err)
			}
			return
		}
		for _, g := range l.Groups {
			if g.Partitions == nil {
				t.Fatal("a group without a partitions list")
			}
			_ = g.Total()
		}
	})
}

func TestDecodeHealthAndLag(t *testing.T) {
	h, err := adminapi.DecodeNodeHealth(strings.NewReader(wireHealth))
	if err != nil || h.NodeID != 1 || !h.NATS.Connected || len(h.NATS.Streams) != 1 || h.Bucket == nil || !h.Bucket.Reachable {
		t.Fatalf("DecodeNodeHealth = %+v, %v", h, err)
	}
	l, err := adminapi.DecodeConsumerLag(strings.NewReader(wireLag))
	if err != nil || len(l.Groups) != 1 || l.Groups[0].Total() != 2 || len(l.Groups[0].History) != 1 {
		t.Fatalf("DecodeConsumerLag = %+v, %v", l, err)
	}
	if _, err := adminapi.DecodeConsumerLag(strings.NewReader(`{"groups":[{"group":"g"}]}`)); !errors.Is(err, adminapi.ErrBadBody) {
		t.Fatalf("a group without partitions: %v", err)
	}
}
