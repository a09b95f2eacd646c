package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/shale-io/shale/internal/proctest"
)

// TestControllerKeepsBrokersWhileTheirStreamElects is issue 24 item 3's
// loaded-machine case (kill -9 of one NATS server of three: every node's
// broker keepalive failed with "no response from stream" for seconds,
// then every partition lost its leader). Three Stores and a controller on
// a 3-server NATS cluster (R3 buckets) whose routes go through proxies;
// the brokers bucket's stream is led by member 0 and every other stream
// by member 1, and the Stores talk to members 1 and 2 only. Member 0's
// routes are cut: the brokers stream has no leader until the two others
// elect one (a Raft election timeout, 4 s or more), longer than the
// broker session (1 s), while the controller's lease and the partitions
// keep theirs. When the stream answers again every broker key has
// expired. The controller must change no partition: its own keepalive
// failed through the gap as every broker's did, so the gap is the control
// plane's, not the brokers'. Before the change it elected away from every
// expired broker (no leader at all) the moment the keys expired.
func TestControllerKeepsBrokersWhileTheirStreamElects(t *testing.T) {
	const topic, parts = "elect", 6
	dir := t.TempDir()
	routes := proctest.StartRoutedNATS(t, filepath.Join(dir, "nats"), quietLogger())
	servers := routes.Servers
	urls := servers[1].ClientURL() + "," + servers[2].ClientURL()
	dial := func() *nats.Conn {
		nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	cfg := StoreConfig{Replicas: 3, BrokerTTL: time.Second, KeepaliveInterval: 300 * time.Millisecond, Logger: quietLogger()}
	var stores []*Store
	for id := int32(1); id <= 3; id++ {
		cfg := cfg
		if id == 1 {
			cfg.Logger = slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
		}
		s := openStore(t, dial(), cfg)
		if err := s.RegisterBroker(testCtx(t), broker(id)); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	ctrl, err := StartController(testCtx(t), stores[0], ControllerConfig{NodeID: 1, LeaseTTL: time.Second,
		Logger: slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ctrl.Close)
	eventually(t, 20*time.Second, "node 1 is controller", ctrl.IsController)
	if _, err := stores[0].CreateTopic(testCtx(t), topic, parts, 3, nil); err != nil {
		t.Fatal(err)
	}
	observer := stores[0]
	settled := func() bool {
		sts := observer.Partitions(topic)
		if len(sts) != parts || len(observer.Brokers()) != 3 {
			return false
		}
		for _, st := range sts {
			if st.Leader < 0 || len(st.ISR) != 3 {
				return false
			}
		}
		return true
	}
	eventually(t, 20*time.Second, "every partition led, full ISRs", settled)

	// The brokers stream led by member 0, every other by member 1.
	nc := dial()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := proctest.Context(t, 2*time.Minute)
	want := func(stream string) string {
		if stream == "KV_"+BucketBrokers {
			return servers[0].Name()
		}
		return servers[1].Name()
	}
	var streams []string
	for name := range js.StreamNames(ctx).Name() {
		streams = append(streams, name)
	}
	if !slices.Contains(streams, "KV_"+BucketBrokers) || !slices.Contains(streams, "KV_"+BucketController) {
		t.Fatalf("streams %v", streams)
	}
	leaderOf := func(stream string) string {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := js.Stream(ictx, stream)
		if err != nil || s.CachedInfo().Cluster == nil {
			t.Logf("stream %s: %v", stream, err)
			return ""
		}
		return s.CachedInfo().Cluster.Leader
	}
	for _, name := range streams {
		eventually(t, 30*time.Second, "stream "+name+" led by "+want(name), func() bool {
			if leaderOf(name) == want(name) {
				return true
			}
			req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": want(name)}})
			m, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+name, req, 2*time.Second)
			if err == nil {
				t.Logf("stepdown %s to %s (leader %q): %s", name, want(name), leaderOf(name), m.Data)
			}
			return leaderOf(name) == want(name)
		})
	}
	eventually(t, 20*time.Second, "every partition led, full ISRs after the stream moves", settled)
	before := map[int32]PartitionState{}
	for _, st := range observer.Partitions(topic) {
		before[st.Partition] = st
	}
	changed := func() string {
		for _, st := range observer.Partitions(topic) {
			b := before[st.Partition]
			if st.Leader != b.Leader || st.LeaderEpoch != b.LeaderEpoch || !slices.Equal(st.ISR, b.ISR) {
				return fmt.Sprintf("partition %d: leader %d epoch %d ISR %v, was leader %d epoch %d ISR %v",
					st.Partition, st.Leader, st.LeaderEpoch, st.ISR, b.Leader, b.LeaderEpoch, b.ISR)
			}
		}
		return ""
	}
	if c := changed(); c != "" {
		t.Fatal(c)
	}

	cut := time.Now()
	routes.CutMember(0)
	eventually(t, 10*time.Second, "member 0 loses its routes", func() bool { return servers[0].NumRoutes() == 0 })

	// Until the brokers stream answers again, every broker is back by its
	// own key and a broker session more has passed, nothing changes.
	// The gap is seen by node 1's keepalive (impaired), the controller's
	// view keeps every broker live through it (graced), and the watch may
	// see the keys expire before the renewals land (expired).
	var impaired, allGraced, expired bool
	var back time.Time
	lastN := 3
	if err := proctest.Poll(90*time.Second, 10*time.Millisecond, func() bool {
		now := time.Now()
		if c := changed(); c != "" {
			t.Fatalf("%v after the cut: %s", now.Sub(cut).Round(time.Millisecond), c)
		}
		impaired = impaired || stores[0].keepaliveImpaired(now)
		allGraced = allGraced || slices.Equal(ctrl.grace.grantedIDs(now), []int32{1, 2, 3})
		n := len(observer.Brokers())
		if n != lastN {
			t.Logf("%v after the cut: %d brokers live", now.Sub(cut).Round(time.Millisecond), n)
			lastN = n
		}
		expired = expired || n < 3
		if back.IsZero() && impaired && n == 3 && !stores[0].keepaliveImpaired(now) {
			back = now
		}
		return !back.IsZero() && now.Sub(back) > 3*cfg.BrokerTTL
	}); err != nil {
		t.Fatalf("the brokers stream did not come back (leader %q, node 1's keepalive impaired %v): %v",
			leaderOf("KV_"+BucketBrokers), impaired, err)
	}
	if !allGraced {
		t.Fatal("the controller's view did not hold every broker live through its own keepalive's gap")
	}
	if leaderOf("KV_"+BucketController) != servers[1].Name() {
		t.Logf("the controller's stream moved to %q meanwhile", leaderOf("KV_"+BucketController))
	}
	t.Logf("brokers stream back %v after the cut (broker keys expired meanwhile: %v); no partition changed (brokers stream now led by %s)",
		back.Sub(cut).Round(time.Millisecond), expired, leaderOf("KV_"+BucketBrokers))
}

// tWriter writes log lines to the test's log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
