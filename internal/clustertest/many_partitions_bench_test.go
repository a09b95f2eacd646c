package clustertest

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/procstat"
	"github.com/shale-io/shale/internal/proctest"
)

// manyIdle is how long BenchmarkManyPartitions measures the idle nodes by
// default (SHALE_BENCH_MANY_IDLE sets another): 30 s, so that the window
// holds one run of each idle pass with a 30 s period (retention, the
// controller's full reconcile, the follower's full visit) wherever it
// starts. With a 10 s window the figure moved by a third from one run to
// the next with whether one of them fell in it.
const manyIdle = 30 * time.Second

// BenchmarkManyPartitions is issue 23's size figure, for `make bench`:
// three shale processes on one NATS server (in this process), tiering to
// one S3 bucket (a versitygw process), and one RF=3 topic
// (min.insync.replicas=2, remote storage on, the broker's default) of 8,
// 1,000, then 10,000 partitions, a new cluster for each. Reported: the time from CreateTopics until every
// partition has a leader and a full ISR in the Metadata of node 1
// (listed-ms) and until, besides, each leader has had a fetch from each of
// its followers in its term (ready-ms, from the nodes' replication
// status); then, with no client traffic for manyIdle, the CPU of the
// busiest node in percent of one core (node-idle-cpu-%) and of this
// process (the NATS server, nats-idle-cpu-%) and of the S3 server
// (s3-idle-cpu-%), the same over the next window
// of the same length (node-steady-cpu-%, nats-steady-cpu-%: the creation's
// aftermath a window behind), the largest resident memory
// of a node (rss-mb, anonymous plus file-backed), the goroutines of the
// node with the most (goroutines) and its open descriptors (fds), also per
// partition (each node holds
// every partition; the 8-partition run shows the fixed part). Asserts
// nothing about time; each phase is bounded.
//
// SHALE_BENCH_MANY_PARTITIONS (comma separated) replaces the partition
// counts; SHALE_BENCH_MANY_TOPICS=T spreads them over T topics;
// SHALE_BENCH_MANY_IDLE (a duration) replaces the idle window's 30 s. With
// SHALE_BENCH_PROFILE_DIR set, each node serves pprof, and its
// goroutines, a CPU profile of a second idle window after the measured one
// (profileIdle: the profiler costs the nodes CPU) and what that window
// allocated are written there (many-<partitions>-node-<id>.pprof,
// -allocs.pprof, -goroutines.txt), and the first 20 s of the creation's
// (-create.pprof: ready-ms is then a little high), and this process's idle
// profile (the NATS server: many-<partitions>-nats.pprof).
// SHALE_BENCH_MANY_TIMEOUTS=defaults runs the nodes at the product's own
// broker session, controller lease and replica.lag.time.max (config.Defaults)
// instead of the tests' short ones (proctest.DefaultNodeFlags): the idle
// cost an operator pays, where the short ones quicken the liveness and ISR
// passes. One iteration is the whole workload: run it with -benchtime 1x.
func BenchmarkManyPartitions(b *testing.B) {
	counts := partitionCounts(b, "SHALE_BENCH_MANY_PARTITIONS", 8, 1000, 10000)
	for _, parts := range counts {
		b.Run(fmt.Sprintf("partitions-%d", parts), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				manyPartitions(b, parts)
			}
		})
	}
}

// manyFDsPerPartition is the descriptors a node keeps open for each
// partition it holds: its active segment's .log (the indexes are mapped
// and their files closed; TestNodeFilesPerPartition).
const manyFDsPerPartition = 1

// manyCreateProfile is how long the CPU profile of a topic's creation
// runs, with SHALE_BENCH_PROFILE_DIR set.
const manyCreateProfile = 20 * time.Second

func manyPartitions(b *testing.B, parts int32) {
	const topic = "many"
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && uint64(parts)*manyFDsPerPartition+1000 > lim.Cur {
		// The nodes inherit this limit; past it partitions fail to open
		// ("too many open files") minutes into the run.
		b.Fatalf("%d partitions need about %d descriptors per node (%d per partition), above RLIMIT_NOFILE %d",
			parts, uint64(parts)*manyFDsPerPartition+1000, manyFDsPerPartition, lim.Cur)
	}
	profDir := os.Getenv("SHALE_BENCH_PROFILE_DIR")
	idle := manyIdle
	if v := os.Getenv("SHALE_BENCH_MANY_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			b.Fatalf("SHALE_BENCH_MANY_IDLE %q: want a duration of at least 1s", v)
		}
		idle = d
	}
	opts := []proctest.ClusterOption{proctest.ClusterName(fmt.Sprintf("many %d", parts))}
	switch v := os.Getenv("SHALE_BENCH_MANY_TIMEOUTS"); v {
	case "":
	case "defaults":
		d := config.Defaults()
		opts = append(opts, proctest.NodeFlags("--broker-session-timeout", d.BrokerSessionTimeout.String(),
			"--controller-lease", d.ControllerLease.String(), "--replica-lag-time-max", d.ReplicaLagTimeMax.String()))
	default:
		b.Fatalf("SHALE_BENCH_MANY_TIMEOUTS=%q: want defaults or nothing", v)
	}
	if profDir != "" {
		opts = append(opts, proctest.NodeEnv("SHALE_ADMIN_PPROF_ENABLE=true"))
	}
	if v := os.Getenv("SHALE_BENCH_MANY_NODE_ENV"); v != "" {
		// Settings for an experiment, as KEY=VALUE,...: for example
		// SHALE_TIERING_INTERVAL=10m to see what the tiering passes cost.
		opts = append(opts, proctest.NodeEnv(strings.Split(v, ",")...))
	}
	// One bucket that every node reaches, as a cluster runs: S3
	// (versitygw). Each node's own filesystem bucket makes a cold-tier
	// conflict, and a node in conflict does not tier: its idle figure left
	// out the tiering passes, which at 10,000 partitions were most of an
	// idle node's CPU. SHALE_BENCH_MANY_BUCKETS=own keeps the old set-up,
	// to compare.
	var s3 *objstoretest.S3Server
	switch v := os.Getenv("SHALE_BENCH_MANY_BUCKETS"); v {
	case "":
		b.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
		b.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
		b.Setenv("AWS_REGION", objstoretest.Region)
		s3 = objstoretest.StartS3Server(b)
		opts = append(opts, proctest.NodeFlags("--s3-endpoint", s3.Endpoint, "--s3-bucket", s3.CreateBucket(b),
			"--s3-path-style", "--s3-region", objstoretest.Region))
	case "own":
	default:
		b.Fatalf("SHALE_BENCH_MANY_BUCKETS=%q: want own or nothing", v)
	}
	c := proctest.StartCluster(b, shaleBin, []int32{1, 2, 3}, opts...)
	ctx := proctest.Context(b, 15*time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(1).Kafka()), kgo.MetadataMinAge(20*time.Millisecond),
		kgo.RequestTimeoutOverhead(5*time.Minute)) // CreateTopics of 5,000 partitions outlasted the default 10 s here
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	two := "2"
	var createProfs sync.WaitGroup
	if profDir != "" {
		// The creation's first manyCreateProfile, on every node; one CPU
		// profile runs at a time, so the idle one waits for these.
		for _, id := range c.IDs() {
			admin := c.Node(id).Admin()
			base := filepath.Join(profDir, fmt.Sprintf("many-%d-node-%d-create", parts, id))
			createProfs.Go(func() {
				saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", admin, int(manyCreateProfile.Seconds())), base+".pprof")
			})
		}
	}
	// One topic, or with SHALE_BENCH_MANY_TOPICS=T the same partitions
	// spread over T topics ("many-0".."many-<T-1>"), made by one
	// CreateTopics.
	names := []string{topic}
	if v := os.Getenv("SHALE_BENCH_MANY_TOPICS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || int32(n) > parts {
			b.Fatalf("SHALE_BENCH_MANY_TOPICS %q (at most the %d partitions)", v, parts)
		}
		names = nil
		for i := range n {
			names = append(names, fmt.Sprintf("%s-%d", topic, i))
		}
	}
	per := map[string]int32{}
	for i, name := range names {
		per[name] = parts / int32(len(names))
		if int32(i) < parts%int32(len(names)) {
			per[name]++
		}
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32((5 * time.Minute).Milliseconds())
	for _, name := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, per[name], 3
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = "min.insync.replicas", &two
		rt.Configs = append(rt.Configs, c)
		req.Topics = append(req.Topics, rt)
	}
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		for _, rt := range resp.Topics {
			if e := kerr.ErrorForCode(rt.ErrorCode); e != nil && err == nil {
				err = fmt.Errorf("%s: %w", rt.Topic, e)
			}
		}
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		// A new cluster: only this call made it. The client retried the
		// request after its first try timed out (10,000 partitions on a
		// loaded machine) and that first try landed.
		b.Logf("creating %d partitions: %v (a retry of a request that landed)", parts, err)
		err = nil
	}
	if err != nil {
		b.Fatalf("creating %d partitions: %v", parts, err)
	}
	created := time.Since(start)
	var last string
	lastLog := time.Now()
	if err := proctest.Poll(10*time.Minute, 100*time.Millisecond, func() bool {
		md, err := adm.Metadata(ctx, names...)
		if err != nil {
			last = err.Error()
			return false
		}
		led, full := 0, 0
		for _, name := range names {
			td, ok := md.Topics[name]
			if !ok || td.Err != nil || int32(len(td.Partitions)) != per[name] {
				last = fmt.Sprintf("topic %s: %v, %d partitions", name, td.Err, len(td.Partitions))
				return false
			}
			for _, pd := range td.Partitions {
				if pd.Err == nil && pd.Leader >= 0 {
					led++
				}
				if len(pd.ISR) == 3 {
					full++
				}
			}
		}
		last = fmt.Sprintf("%d led, %d with a full ISR", led, full)
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			b.Logf("%d partitions, %v after CreateTopics: %s", parts, time.Since(start).Round(time.Second), last)
		}
		return led == int(parts) && full == int(parts)
	}); err != nil {
		b.Fatalf("%d partitions led with full ISRs: %v (%s)", parts, err, last)
	}
	listed := time.Since(start)
	// A new partition's ISR is its whole replica set from the start (as in
	// Kafka), so the metadata alone does not show the followers running:
	// with replica.lag.time.max.ms at 30 s a follower still opening its
	// log stays in the ISR. Ready is when every leader has heard a fetch
	// from each of its followers in its term.
	if err := proctest.Poll(10*time.Minute, 500*time.Millisecond, func() bool {
		fetched := 0
		for _, id := range c.IDs() {
			st, err := adminapi.Client{Timeout: time.Minute}.ReplicationStatus(ctx, c.Node(id).Admin(), "")
			if err != nil {
				last = err.Error()
				return false
			}
			for _, p := range st.Partitions {
				for _, f := range p.Followers {
					if f.InISR && f.LogEndOffset >= 0 {
						fetched++
					}
				}
			}
		}
		last = fmt.Sprintf("%d of %d followers fetched from their leader", fetched, 2*parts)
		return fetched == 2*int(parts)
	}); err != nil {
		b.Fatalf("%d partitions: followers fetching: %v (%s)", parts, err, last)
	}
	ready := time.Since(start)
	cl.Close() // no client traffic while idle
	createProfs.Wait()

	changes0 := changesLogged(c)
	allocs0 := nodeAllocs(b, c)
	cpu0, self0, s30 := nodeCPUs(b, c), selfCPU(b), s3CPU(b, s3)
	from := time.Now()
	time.Sleep(idle) // the window measured
	cpu1, self1, s31, took := nodeCPUs(b, c), selfCPU(b), s3CPU(b, s3), time.Since(from)
	allocs1 := nodeAllocs(b, c)
	// What the busiest allocator allocated and collected in the window:
	// unlike CPU time, neither depends on what else the machine runs, so
	// they show a change to the idle work on a loaded machine too. (They
	// include one /metrics scrape's own allocations.)
	allocRate, gcs := 0.0, 0.0
	for i := range allocs0 {
		if d := (allocs1[i][0] - allocs0[i][0]) / took.Seconds(); d > allocRate {
			allocRate, gcs = d, allocs1[i][1]-allocs0[i][1]
		}
	}
	// Of the busiest node's CPU, gcCPU is what the runtime puts down to
	// garbage collection and returning memory to the kernel (its own
	// estimate).
	busiest, busiestSys, gcCPU := time.Duration(0), time.Duration(0), 0.0
	for i := range cpu0 {
		if d := cpu1[i].CPU - cpu0[i].CPU; d > busiest {
			busiest, busiestSys = d, cpu1[i].System-cpu0[i].System
			gcCPU = allocs1[i][2] - allocs0[i][2]
		}
	}
	// The next window of the same length: the idle cluster once the
	// creation's aftermath (the runtime returning its heap to the kernel,
	// the first passes over the new partitions) is a window behind it,
	// what a cluster that has stood idle costs.
	cpu2, self2 := nodeCPUs(b, c), selfCPU(b)
	from = time.Now()
	time.Sleep(idle)
	cpu3, self3, took2 := nodeCPUs(b, c), selfCPU(b), time.Since(from)
	steady := time.Duration(0)
	for i := range cpu2 {
		steady = max(steady, cpu3[i].CPU-cpu2[i].CPU)
	}
	rss, goroutines, fds := int64(0), 0.0, 0
	for _, id := range c.IDs() {
		if m := c.Node(id).Metrics(); m["shale_balancer_moves_planned"] > 0 {
			b.Logf("%d partitions: node %d's last balancer pass planned %v moves after the idle window", parts, id, m["shale_balancer_moves_planned"])
		}
	}
	for _, id := range c.IDs() {
		rss = max(rss, nodeRSS(b, c.Node(id)))
		goroutines = max(goroutines, c.Node(id).Metrics()["go_goroutines"])
		fds = max(fds, nodeOpenFiles(b, c.Node(id)))
	}
	// Whether the window was idle: the leadership and ISR changes the
	// nodes logged in it (the balancer's moves, elections, ISR changes).
	b.ReportMetric(float64(changesLogged(c)-changes0), "idle-changes")
	b.ReportMetric(float64(ready.Milliseconds()), "ready-ms")
	b.ReportMetric(float64(listed.Milliseconds()), "listed-ms")
	b.ReportMetric(float64(created.Milliseconds()), "create-ms")
	b.ReportMetric(100*busiest.Seconds()/took.Seconds(), "node-idle-cpu-%")
	b.ReportMetric(100*busiestSys.Seconds()/took.Seconds(), "node-idle-sys-%") // of it, in the kernel
	b.ReportMetric(100*(self1-self0).Seconds()/took.Seconds(), "nats-idle-cpu-%")
	if s3 != nil {
		b.ReportMetric(100*(s31-s30).Seconds()/took.Seconds(), "s3-idle-cpu-%") // the bucket's server, versitygw
	}
	b.ReportMetric(100*steady.Seconds()/took2.Seconds(), "node-steady-cpu-%")
	b.ReportMetric(100*(self3-self2).Seconds()/took2.Seconds(), "nats-steady-cpu-%")
	b.ReportMetric(allocRate/1024, "node-idle-alloc-KiB/s")
	b.ReportMetric(gcs*60/took.Seconds(), "node-idle-gcs/min")
	b.ReportMetric(100*gcCPU/took.Seconds(), "node-idle-gc-cpu-%") // of node-idle-cpu-%
	b.ReportMetric(float64(rss)/(1<<20), "rss-mb")
	b.ReportMetric(goroutines/float64(parts), "goroutines/partition")
	b.ReportMetric(goroutines, "goroutines")
	b.ReportMetric(float64(fds), "fds")
	b.ReportMetric(float64(fds)/float64(parts), "fds/partition")
	if profDir != "" {
		profileIdle(b, c, profDir, parts, idle)
	}
	c.CheckNoPanic()
}

// profileIdle profiles a second idle window of the same length, after the
// measured one: each node's CPU profile, its heap at both ends and its
// goroutines, this process's profile (the NATS server) and the window's
// messages by subject. The figures come from the first window: the
// profiler's signals cost a node kernel time (at 10,000 partitions a
// profiled window measured 1.45-1.72% of a core, unprofiled ones
// 0.90-1.03%, half of it the kernel's).
func profileIdle(b *testing.B, c *proctest.Cluster, profDir string, parts int32, idle time.Duration) {
	var profs sync.WaitGroup
	for _, id := range c.IDs() {
		admin := c.Node(id).Admin()
		base := filepath.Join(profDir, fmt.Sprintf("many-%d-node-%d", parts, id))
		profs.Go(func() {
			saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", admin, int(idle.Seconds())), base+".pprof")
		})
		// What the idle window allocated (the garbage collector's work):
		// two heap profiles, each after a collection, for
		// `go tool pprof -sample_index=alloc_space -base A B`. (A delta
		// allocs profile is published at collections, up to two cycles
		// late: at an idle node's few collections a minute it showed
		// the window before.)
		saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", admin), base+"-heap-start.pprof")
		saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=1", admin), base+"-goroutines.txt")
	}
	// This process is the NATS server: its idle profile too, and what the
	// messages of the idle window were.
	stopSelf := startSelfProfile(b, filepath.Join(profDir, fmt.Sprintf("many-%d-nats.pprof", parts)))
	stopTally := tallySubjects(b, c.NATSURL(), filepath.Join(profDir, fmt.Sprintf("many-%d-nats-subjects.txt", parts)))
	time.Sleep(idle) // the profiles' window
	for _, id := range c.IDs() {
		saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", c.Node(id).Admin()),
			filepath.Join(profDir, fmt.Sprintf("many-%d-node-%d-heap-end.pprof", parts, id)))
	}
	profs.Wait()
	stopSelf()
	stopTally()
	// Then 10 s of each node's execution trace: what woke which goroutine
	// (`go tool trace -d=parsed`, or its scheduler latency profile).
	for _, id := range c.IDs() {
		profs.Go(func() {
			saveProfile(b, fmt.Sprintf("http://%s/debug/pprof/trace?seconds=10", c.Node(id).Admin()),
				filepath.Join(profDir, fmt.Sprintf("many-%d-node-%d.trace", parts, id)))
		})
	}
	profs.Wait()
}

// s3CPU is the CPU time of the S3 server s, 0 without one.
func s3CPU(b *testing.B, s *objstoretest.S3Server) time.Duration {
	if s == nil {
		return 0
	}
	st, err := procstat.Read(s.Pid())
	if err != nil {
		b.Fatalf("the S3 server: %v", err)
	}
	return st.CPU
}

// nodeAllocs is each node's bytes allocated so far, garbage collections
// run and CPU seconds the runtime counts as collection and scavenging, in
// c.IDs order, from its /metrics.
func nodeAllocs(b *testing.B, c *proctest.Cluster) [][3]float64 {
	var out [][3]float64
	for _, id := range c.IDs() {
		m := c.Node(id).Metrics()
		if _, ok := m["go_memstats_alloc_bytes_total"]; !ok {
			b.Fatalf("node %d: no go_memstats_alloc_bytes_total in /metrics", id)
		}
		out = append(out, [3]float64{m["go_memstats_alloc_bytes_total"], m["go_gc_duration_seconds_count"],
			m["go_cpu_classes_gc_total_cpu_seconds_total"] + m["go_cpu_classes_scavenge_total_cpu_seconds_total"]})
	}
	return out
}

// nodeCPUs is the CPU time of each of the cluster's nodes, in c.IDs order.
func nodeCPUs(b *testing.B, c *proctest.Cluster) []procstat.Stat {
	var out []procstat.Stat
	for _, id := range c.IDs() {
		cmd := c.Node(id).Cmd()
		if cmd == nil || cmd.Process == nil {
			b.Fatalf("node %d not running", id)
		}
		st, err := procstat.Read(cmd.Process.Pid)
		if err != nil {
			b.Fatalf("node %d: %v", id, err)
		}
		out = append(out, st)
	}
	return out
}

// nodeRSS is a node's resident memory (VmRSS: anonymous, file-backed and
// shared) in bytes.
func nodeRSS(b *testing.B, n *proctest.Node) int64 {
	cmd := n.Cmd()
	if cmd == nil || cmd.Process == nil {
		b.Fatal("node not running")
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// partitionCounts is the partition counts a benchmark runs: env's
// comma-separated value when set, else def.
func partitionCounts(b *testing.B, env string, def ...int32) []int32 {
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	var counts []int32
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s: %q", env, v)
		}
		counts = append(counts, int32(n))
	}
	return counts
}

// tallySubjects counts the messages NATS carries on url's account from now
// until the returned func, by subject shape (subjectShape), and writes the
// counts to path, most first. Its own subscription to every subject makes
// NATS deliver each message once more: the idle figures of a run with it
// are a little high.
func tallySubjects(b *testing.B, url, path string) func() {
	nc, err := nats.Connect(url, nats.Name("bench subject tally"))
	if err != nil {
		b.Logf("subject tally: %v", err)
		return func() {}
	}
	var mu sync.Mutex
	counts := map[string]int{}
	from := time.Now()
	_, err = nc.Subscribe(">", func(m *nats.Msg) {
		mu.Lock()
		counts[subjectShape(m.Subject)]++
		mu.Unlock()
	})
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		b.Logf("subject tally: %v", err)
		nc.Close()
		return func() {}
	}
	return func() {
		took := time.Since(from)
		nc.Close()
		mu.Lock()
		defer mu.Unlock()
		shapes := slices.Collect(maps.Keys(counts))
		slices.SortFunc(shapes, func(a, c string) int { return counts[c] - counts[a] })
		var sb strings.Builder
		total := 0
		for _, k := range shapes {
			total += counts[k]
		}
		fmt.Fprintf(&sb, "%d messages in %v (%.1f/s)\n", total, took.Round(time.Millisecond), float64(total)/took.Seconds())
		for _, k := range shapes {
			fmt.Fprintf(&sb, "%8d %6.1f/s  %s\n", counts[k], float64(counts[k])/took.Seconds(), k)
		}
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			b.Logf("subject tally: %v", err)
		}
	}
}

// subjectShape is a subject with its variable parts (inboxes, ids, keys)
// cut: the first tokens that name what it is for.
func subjectShape(subject string) string {
	t := strings.Split(subject, ".")
	keep := 2
	switch {
	case t[0] == "_INBOX":
		keep = 1
	case t[0] == "$JS" && len(t) > 2 && t[1] == "API":
		keep = 5 // the API and the stream
	case t[0] == "$JS" && len(t) > 2 && t[1] == "ACK":
		keep = 3
	case t[0] == "$JS" && len(t) > 2 && t[1] == "EVENT":
		keep = 5
	case t[0] == "$KV":
		keep = 3 // the bucket and the key's first token
	}
	if len(t) > keep {
		t = append(t[:keep], "*")
	}
	return strings.Join(t, ".")
}

// changesLogged counts the lines of every node's output so far that report a
// change of a partition's leadership or ISR.
func changesLogged(c *proctest.Cluster) int {
	n := 0
	for _, id := range c.IDs() {
		for _, l := range strings.Split(c.Node(id).Output(), "\n") {
			if strings.Contains(l, `msg="balancer: move"`) || strings.Contains(l, `msg="ISR changed"`) ||
				strings.Contains(l, `msg="became leader"`) {
				n++
			}
		}
	}
	return n
}
