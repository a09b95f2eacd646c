package quota_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/quota"
)

// throttleHook counts the throttles a client was told of (kgo's
// OnBrokerThrottle).
type throttleHook struct {
	n, after atomic.Int64
	total    atomic.Int64 // nanoseconds
	longest  atomic.Int64 // nanoseconds
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, throttledAfterResponse bool) {
	h.n.Add(1)
	h.total.Add(int64(d))
	for {
		cur := h.longest.Load()
		if int64(d) <= cur || h.longest.CompareAndSwap(cur, int64(d)) {
			break
		}
	}
	if throttledAfterResponse {
		h.after.Add(1)
	}
}

// setQuota sets one quota with kadm and waits until node n enforces it.
func setQuota(t *testing.T, n *broker.Node, adm *kadm.Client, e quota.Entity, key string, v float64) {
	t.Helper()
	var ent kadm.ClientQuotaEntity
	name := func(x quota.Name) *string {
		if x.Default {
			return nil
		}
		return &x.Name
	}
	if e.User.Set {
		ent = append(ent, kadm.ClientQuotaEntityComponent{Type: "user", Name: name(e.User)})
	}
	if e.ClientID.Set {
		ent = append(ent, kadm.ClientQuotaEntityComponent{Type: "client-id", Name: name(e.ClientID)})
	}
	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{Entity: ent, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("set %v %s=%v: %v %v", e, key, v, res, err)
	}
	typ, _ := quota.TypeForKey(key)
	user, client := e.User.Name, e.ClientID.Name
	proctest.Eventually(t, 10*time.Second, "the node enforces "+e.String(), func() bool {
		limit, from, ok := n.Quotas().Resolve(typ, user, client)
		return ok && from == e && limit == v
	})
}

// produceFor produces records of size bytes until total bytes are acked,
// one request at a time, and returns the rate it got in bytes per second.
func produceFor(t *testing.T, cl *kgo.Client, topic string, size, total int) float64 {
	t.Helper()
	ctx := proctest.Context(t, 60*time.Second)
	value := make([]byte, size)
	start := time.Now()
	for sent := 0; sent < total; sent += size * 16 {
		recs := make([]*kgo.Record, 16)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Value: value}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return float64(total) / time.Since(start).Seconds()
}

// TestProduceQuotasPerUser: two users on a SASL listener, alice with a
// quota of her own and bob under the default user's, each produce five
// seconds' worth of their quota at once. Each is held near its own rate
// (measured, within generous bounds for a shared machine: above the quota
// only by the one-second burst a fresh rate allows, and not far below
// it), and franz-go was told to back off after the responses (KIP-219).
func TestProduceQuotasPerUser(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("alice:alice-pw\nbob:bob-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testnodeStart(t, testnode.WithQuotaWindow(100*time.Millisecond), func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms, c.SASLPlainUsersFile = "PLAIN", users
	})
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	ctx := proctest.Context(t, 30*time.Second)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "quota-produce"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const aliceQuota, bobQuota = 100_000, 40_000
	setQuota(t, n, adm, quota.Entity{User: quota.Named("alice")}, quota.KeyProducerByteRate, aliceQuota)
	setQuota(t, n, adm, quota.Entity{User: quota.DefaultName()}, quota.KeyProducerByteRate, bobQuota)

	type run struct {
		user, pass string
		quota      float64
		hook       throttleHook
		rate       float64
	}
	runs := []*run{{user: "alice", pass: "alice-pw", quota: aliceQuota}, {user: "bob", pass: "bob-pw", quota: bobQuota}}
	var wg sync.WaitGroup
	for _, r := range runs {
		cl := testnode.Client(t, n.ListenerAddr("SASL_PLAINTEXT"), kgo.SASL(plain.Auth{User: r.user, Pass: r.pass}.AsMechanism()),
			kgo.WithHooks(&r.hook), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.DefaultProduceTopic("quota-produce"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.rate = produceFor(t, cl, "quota-produce", 1000, int(5*r.quota))
		}()
	}
	wg.Wait()
	for _, r := range runs {
		ratio := r.rate / r.quota
		t.Logf("%s: %.0f B/s against a quota of %.0f B/s (%.2f), %d throttles (%d after the response) totalling %v",
			r.user, r.rate, r.quota, ratio, r.hook.n.Load(), r.hook.after.Load(), time.Duration(r.hook.total.Load()))
		// Five seconds' worth, one of them a burst: at most 5/4 of the
		// quota in theory; 1.5 leaves room for the last request.
		if ratio > 1.5 || ratio < 0.4 {
			t.Errorf("%s produced at %.2f of its quota, want within [0.4, 1.5]", r.user, ratio)
		}
		if r.hook.after.Load() == 0 || time.Duration(r.hook.total.Load()) < 2*time.Second {
			t.Errorf("%s: %d throttles after responses totalling %v, want some totalling 2s or more",
				r.user, r.hook.after.Load(), time.Duration(r.hook.total.Load()))
		}
	}
}

// TestFetchQuotaPerClientID: a consumer whose client id has a
// consumer_byte_rate reads a topic near that rate, while a consumer with
// no quota reads the same records at once.
func TestFetchQuotaPerClientID(t *testing.T) {
	n := testnodeStart(t, testnode.WithQuotaWindow(100*time.Millisecond))
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	ctx := proctest.Context(t, 60*time.Second)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "quota-fetch"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const q, size, total = 50_000, 1000, 200_000
	prod := testnode.Client(t, n.KafkaAddr(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceFor(t, prod, "quota-fetch", size, total)
	setQuota(t, n, adm, quota.Entity{ClientID: quota.Named("slow-reader")}, quota.KeyConsumerByteRate, q)

	consume := func(clientID string, hook *throttleHook) float64 {
		cl := testnode.Client(t, n.KafkaAddr(), kgo.ClientID(clientID), kgo.ConsumeTopics("quota-fetch"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(hook))
		start := time.Now()
		got := 0
		for got < total {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s: read %d of %d bytes: %v", clientID, got, total, err)
			}
			fs.EachRecord(func(r *kgo.Record) { got += len(r.Value) })
		}
		return float64(got) / time.Since(start).Seconds()
	}
	var slowHook, freeHook throttleHook
	free := consume("free-reader", &freeHook)
	slow := consume("slow-reader", &slowHook)
	t.Logf("slow-reader %.0f B/s against %d (%.2f), %d throttles; free-reader %.0f B/s, %d throttles",
		slow, q, slow/q, slowHook.n.Load(), free, freeHook.n.Load())
	// 200 KB at 50 KB/s, one second a burst: 4/3 of the quota in theory.
	if r := slow / q; r > 1.6 || r < 0.4 {
		t.Errorf("slow-reader read at %.2f of its quota, want within [0.4, 1.6]", r)
	}
	if slowHook.after.Load() == 0 || freeHook.n.Load() != 0 {
		t.Errorf("throttles: slow-reader %d after responses, free-reader %d", slowHook.after.Load(), freeHook.n.Load())
	}
	if free < 2*q {
		t.Errorf("free-reader read at %.0f B/s, below twice the other's quota", free)
	}
}

// TestColdReadQuota: two clients replay a tiered topic from offset 0 at
// once; the one whose client id has a shale.remote_fetch_byte_rate reads
// the remote segments near that rate, while the other, with no quota,
// reads all of it meanwhile.
func TestColdReadQuota(t *testing.T) {
	n := testnodeStart(t, testnode.WithQuotaWindow(100*time.Millisecond), testnode.WithTiering(100*time.Millisecond))
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	ctx := proctest.Context(t, 120*time.Second)
	cfg := map[string]*string{"segment.bytes": new("16384"), "local.retention.bytes": new("32768"), "remote.storage.enable": new("true")}
	if r, err := adm.CreateTopic(ctx, 1, 1, cfg, "quota-cold"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	const size, total = 200, 240_000
	prod := testnode.Client(t, n.KafkaAddr(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(8<<10))
	produceFor(t, prod, "quota-cold", size, total)
	var localStart int64
	proctest.Eventually(t, 90*time.Second, "most of the topic tiered and deleted locally", func() bool {
		rep := testnode.Replica(n, "quota-cold", 0)
		if rep == nil {
			return false
		}
		localStart = rep.Log().LogStartOffset()
		return localStart*size > total/2
	})
	const q = 40_000
	setQuota(t, n, adm, quota.Entity{ClientID: quota.Named("replayer")}, quota.KeyRemoteFetchByteRate, q)

	type replay struct {
		hook      throttleHook
		coldBytes int
		coldTime  time.Duration
		done      time.Time
	}
	read := func(clientID string, r *replay) {
		cl := testnode.Client(t, n.KafkaAddr(), kgo.ClientID(clientID), kgo.ConsumeTopics("quota-cold"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&r.hook))
		start := time.Now()
		for got := 0; got < total; {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Errorf("%s: read %d of %d bytes: %v", clientID, got, total, err)
				return
			}
			fs.EachError(func(_ string, _ int32, err error) { t.Logf("%s: fetch error %v", clientID, err) })
			fs.EachRecord(func(rec *kgo.Record) {
				got += len(rec.Value)
				if rec.Offset < localStart {
					r.coldBytes += len(rec.Value)
					r.coldTime = time.Since(start)
				}
			})
		}
		r.done = time.Now()
	}
	var limited, other replay
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); read("replayer", &limited) }()
	go func() { defer wg.Done(); read("other", &other) }()
	wg.Wait()
	rate := float64(limited.coldBytes) / limited.coldTime.Seconds()
	t.Logf("replayer: %d cold bytes in %v, %.0f B/s against %d (%.2f), %d throttles; other: %d cold bytes in %v, %d throttles",
		limited.coldBytes, limited.coldTime, rate, q, rate/q, limited.hook.n.Load(), other.coldBytes, other.coldTime, other.hook.n.Load())
	// Record values are less than the batch bytes counted: the rate of
	// values is below the rate the quota holds.
	if r := rate / q; r > 1.6 || r < 0.3 {
		t.Errorf("replayer read remote segments at %.2f of its quota, want within [0.3, 1.6]", r)
	}
	if limited.hook.after.Load() == 0 || other.hook.n.Load() != 0 {
		t.Errorf("throttles: replayer %d after responses, other %d", limited.hook.after.Load(), other.hook.n.Load())
	}
	if !other.done.Before(limited.done) || other.coldTime > limited.coldTime/2 {
		t.Errorf("the client without a quota read its cold bytes in %v, the replayer in %v", other.coldTime, limited.coldTime)
	}
}

// TestRequestPercentageQuota: a client id held to 0.1% of a request
// handler (1 ms of handler time a second) is throttled after a run of
// DescribeClientQuotas requests, each throttle at most one window (Kafka bounds
// request-time throttles so), while another client is not.
func TestRequestPercentageQuota(t *testing.T) {
	n := testnodeStart(t, testnode.WithQuotaWindow(100*time.Millisecond))
	adm := kadm.NewClient(testnode.Client(t, n.KafkaAddr()))
	setQuota(t, n, adm, quota.Entity{ClientID: quota.Named("busy")}, quota.KeyRequestPercentage, 0.1)
	ctx := proctest.Context(t, 60*time.Second)
	var busy, calm throttleHook
	for _, c := range []struct {
		id   string
		hook *throttleHook
	}{{"busy", &busy}, {"calm", &calm}} {
		cl := testnode.Client(t, n.KafkaAddr(), kgo.ClientID(c.id), kgo.WithHooks(c.hook))
		for i := 0; i < 300 && c.hook.n.Load() < 3; i++ {
			if _, err := cl.Request(ctx, kmsg.NewPtrDescribeClientQuotasRequest()); err != nil {
				t.Fatal(err)
			}
		}
		if c.id == "busy" {
			// The node measured the busy client over its quota.
			if r, limit, ok := n.Quotas().Rate(quota.Request, "ANONYMOUS", "busy", time.Now()); !ok || limit != 0.1 || r <= limit/2 {
				t.Errorf("the node measured %v%% against %v (%v)", r, limit, ok)
			}
		}
	}
	t.Logf("busy: %d throttles, longest %v; calm: %d", busy.n.Load(), time.Duration(busy.longest.Load()), calm.n.Load())
	if busy.n.Load() < 3 || calm.n.Load() != 0 {
		t.Fatalf("throttles: busy %d, calm %d", busy.n.Load(), calm.n.Load())
	}
	if l := time.Duration(busy.longest.Load()); l > 100*time.Millisecond {
		t.Fatalf("a request-time throttle of %v, beyond one window", l)
	}
	f := testnode.Scrape(t, n)
	if v := testnode.MustMetric(t, f, "kafka_server_quota_throttled_requests_total", "quota_type", "Request"); v < float64(busy.n.Load()) {
		t.Errorf("%v Request throttles in the metrics, the client was told of %d", v, busy.n.Load())
	}
	if v := testnode.MustMetric(t, f, "kafka_server_quota_throttle_time_seconds_total", "quota_type", "Request"); v <= 0 || v > float64(busy.n.Load())*0.1+0.1 {
		t.Errorf("%vs of Request throttle time in the metrics for %d throttles of at most 100ms", v, busy.n.Load())
	}
}

func testnodeStart(t *testing.T, opts ...testnode.Option) *broker.Node {
	return testnode.Start(t, t.TempDir(), opts...)
}
