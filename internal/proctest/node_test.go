package proctest

import (
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/procstat"
)

// TestMain runs the tests, or, when PROCTEST_CHILD is set, plays the child
// the Node tests start.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PROCTEST_CHILD"); mode != "" {
		childMain(mode)
	}
	os.Exit(m.Run())
}

// childMain is the child the Node tests run (this test binary), told what
// to do by mode: "serve" answers /readyz and /metrics (childMetrics) on
// PROCTEST_ADMIN and exits 0 on SIGTERM; "exit3" exits 3 at once; "panic"
// panics; "hang" blocks in childHangs, never ready.
func childMain(mode string) {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	shaleVars := 0
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SHALE_") {
			shaleVars++
		}
	}
	log.Info("child started", "mode", mode, "shale_vars", shaleVars, "echo", os.Getenv("PROCTEST_ECHO"))
	switch mode {
	case "exit3":
		os.Exit(3)
	case "panic":
		panic("child asked to panic")
	case "hang":
		childHangs()
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ln, err := net.Listen("tcp", os.Getenv("PROCTEST_ADMIN"))
	if err != nil {
		log.Error("listen", "err", err)
		os.Exit(1)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			io.WriteString(w, childMetrics)
		}
	}))
	<-term
	log.Info("stopped cleanly")
	os.Exit(0)
}

// childMetrics is what a "serve" child answers on /metrics.
const childMetrics = "# TYPE kafka_requests_total counter\nkafka_requests_total{request=\"Produce\"} 3\ngo_goroutines 7\n"

// childHangs blocks forever, a start that never ends.
func childHangs() { select {} }

// testChild prepares this test binary as a child in mode.
func testChild(t *testing.T, mode string, opts ...Option) *Node {
	admin := FreeAddr(t)
	args := []string{"-test.run=^$"}
	opts = append([]Option{Env("PROCTEST_CHILD="+mode, "PROCTEST_ADMIN="+admin), AdminAddr(admin)}, opts...)
	return NewNode(t, os.Args[0], args, opts...)
}

// procState is the state letter of pid in /proc/pid/stat ("T" when stopped).
func procState(pid int) string {
	st, err := procstat.Read(pid)
	if err != nil {
		return ""
	}
	return string(st.State)
}

func TestNodeLifecycle(t *testing.T) {
	t.Setenv("SHALE_SECRET", "x") // must not reach the child
	n := testChild(t, "serve", Name("kid"), Env("PROCTEST_ECHO=hello"))
	if n.Alive() || n.Cmd() != nil {
		t.Fatal("alive before Start")
	}
	n.Start()
	n.WaitReady()
	if !n.Alive() {
		t.Fatal("not alive after WaitReady")
	}

	pid := n.Cmd().Process.Pid
	n.Pause()
	if !n.Paused() {
		t.Fatal("Paused false after Pause")
	}
	// Pause returns only once every thread is stopped: no polling here.
	if !procstat.AllThreadsStopped(pid) || procState(pid) != "T" {
		t.Fatalf("process state %q right after Pause returned", procState(pid))
	}
	n.Resume()
	if n.Paused() {
		t.Fatal("Paused true after Resume")
	}
	if err := WaitFor(10*time.Second, func() bool { return procState(pid) != "T" }); err != nil {
		t.Fatalf("still stopped after SIGCONT: %v", err)
	}

	n.Pause()
	n.Kill() // a stopped process dies on SIGKILL
	if n.Alive() || n.Paused() || n.Cmd() != nil {
		t.Fatal("a killed run is still live or paused")
	}

	n.Start() // the same arguments: a restart
	n.WaitReady()
	code, _ := n.Stop(20 * time.Second)
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	if n.Runs() != 2 {
		t.Fatalf("Runs = %d, want 2", n.Runs())
	}

	out := n.Output()
	for _, want := range []string{"=== kid: run 1: shale -test.run=^$", "=== kid: run 2: shale -test.run=^$"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	started := n.LogLines("child started")
	if len(started) != 2 || n.CountLines("child started") != 2 {
		t.Fatalf("%d %q lines, want 2:\n%s", len(started), "child started", out)
	}
	if kv := started[0]; kv["shale_vars"] != "0" || kv["echo"] != "hello" {
		t.Fatalf("child environment: %v (want no SHALE_* variables and the Env option's)", kv)
	}
	if n.CountLines("stopped cleanly") != 1 {
		t.Fatalf("no clean stop logged:\n%s", out)
	}
	n.CheckNoPanic()
}

func TestNodeWaitExit(t *testing.T) {
	n := testChild(t, "exit3")
	n.Start()
	if code := n.WaitExit(20 * time.Second); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
	if n.Alive() || n.Cmd() != nil {
		t.Fatal("run still live after WaitExit")
	}

	p := testChild(t, "panic")
	p.Start()
	if code := p.WaitExit(20 * time.Second); code != 2 {
		t.Fatalf("panicking child's exit code %d, want 2", code)
	}
	mark, excerpt, ok := crashIn(p.Output())
	if !ok || mark != "panic:" || !strings.Contains(excerpt, "child asked to panic") {
		t.Fatalf("crashIn = %q, %v on:\n%s", mark, ok, p.Output())
	}
}

func TestCrashIn(t *testing.T) {
	if _, _, ok := crashIn("level=INFO msg=\"all fine\"\n=== e2e: run 2: shale serve\n"); ok {
		t.Fatal("a clean output has a crash mark")
	}
	for _, out := range []string{
		"x\npanic: boom\n", "handler panicked\n", "fatal error: concurrent map writes\n",
		"SIGQUIT: quit\ngoroutine 1 [running]:\n", "==================\nWARNING: DATA RACE\n",
	} {
		if _, _, ok := crashIn(out); !ok {
			t.Errorf("no crash mark found in %q", out)
		}
	}
	long := strings.Repeat("a", 5000) + "panic: x" + strings.Repeat("b", 5000)
	if _, ex, _ := crashIn(long); len(ex) != 6000 || !strings.HasPrefix(ex[2000:], "panic: x") {
		t.Fatalf("excerpt of %d bytes, want 2000 before the mark and 4000 from it", len(ex))
	}
}

func TestPoll(t *testing.T) {
	calls := 0
	if err := Poll(10*time.Second, time.Millisecond, func() bool { calls++; return calls == 3 }); err != nil || calls != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, calls)
	}
	if err := Poll(0, time.Millisecond, func() bool { return false }); !errors.Is(err, ErrDeadline) {
		t.Fatalf("Poll past its deadline = %v, want ErrDeadline", err)
	}
}

func TestServeArgs(t *testing.T) {
	n := Serve(t, "/bin/false", "/data", []string{"--node-id", "2"})
	want := []string{"serve", "--data-dir", "/data", "--listen", n.Kafka(), "--admin-listen", n.Admin(), "--node-id", "2"}
	if got := n.Args(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("Args = %v, want %v", got, want)
	}
	if n.Kafka() == n.Admin() || !strings.HasPrefix(n.Kafka(), "127.0.0.1:") || n.DataDir() != "/data" {
		t.Fatalf("addresses %s, %s, data dir %s", n.Kafka(), n.Admin(), n.DataDir())
	}
}

// TestMainStackOfAHangingRun: the failure of a run that never becomes ready
// quotes where its main goroutine is blocked, from the dump SIGQUIT makes.
func TestMainStackOfAHangingRun(t *testing.T) {
	n := testChild(t, "hang")
	n.Start()
	if err := WaitFor(10*time.Second, func() bool { return n.CountLines("child started") == 1 }); err != nil {
		t.Fatal(err)
	}
	st := n.mainStack()
	if !strings.HasPrefix(st, "\ngoroutine 1 ") || !strings.Contains(st, "childHangs") {
		t.Fatalf("main stack:\n%s\noutput:\n%s", st, n.Tail())
	}
	if n.Alive() {
		t.Fatal("alive after its dump")
	}
	if st := n.mainStack(); st != "" {
		t.Fatalf("a second dump of an ended run: %q", st)
	}
}

func TestGoroutineIn(t *testing.T) {
	dump := "SIGQUIT: quit\n\ngoroutine 7 [running]:\nx()\n\ngoroutine 1 [select (no cases)]:\nmain.f()\n\tf.go:3\n\ngoroutine 9 [IO wait]:\n"
	if got, want := goroutineIn(dump, 1), "goroutine 1 [select (no cases)]:\nmain.f()\n\tf.go:3"; got != want {
		t.Errorf("goroutine 1: %q, want %q", got, want)
	}
	if got := goroutineIn(dump, 2); !strings.Contains(got, "no ") {
		t.Errorf("goroutine 2: %q", got)
	}
	signalled := "goroutine 10 gp=0x2 m=nil [IO wait]:\ny()\n\ngoroutine 1 gp=0x1 m=nil [select (no cases)]:\nmain.f()\n"
	if got, want := goroutineIn(signalled, 1), "goroutine 1 gp=0x1 m=nil [select (no cases)]:\nmain.f()\n"; got != want {
		t.Errorf("signalled goroutine 1: %q, want %q", got, want)
	}
}

// TestRequestSamples: RequestSamples sums, by name, the samples labelled
// only with the API's request, and leaves out other APIs, other labels
// and unlabelled samples.
func TestRequestSamples(t *testing.T) {
	lines := []string{
		"# TYPE kafka_network_requestmetrics_total_time_seconds histogram",
		`kafka_network_requestmetrics_total_time_seconds_bucket{le="0.005",request="Produce"} 12`,
		`kafka_network_requestmetrics_total_time_seconds_sum{request="Produce"} 0.25`,
		`kafka_network_requestmetrics_total_time_seconds_count{request="Produce"} 40`,
		`kafka_network_requestmetrics_total_time_seconds_count{request="Fetch"} 7`,
		`kafka_network_requestmetrics_remote_time_seconds_sum{request="Produce"} 0.125`,
		`kafka_network_requestmetrics_remote_time_seconds_sum{request="Produce"} 0.125`,
		"go_goroutines 7",
		"",
	}
	got := RequestSamples(t, lines, "Produce")
	want := map[string]float64{
		"kafka_network_requestmetrics_total_time_seconds_sum":   0.25,
		"kafka_network_requestmetrics_total_time_seconds_count": 40,
		"kafka_network_requestmetrics_remote_time_seconds_sum":  0.25,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("RequestSamples %v, want %v", got, want)
	}
}

// TestMetricLines: MetricLines returns a live run's /metrics exposition
// line by line, labelled series included.
func TestMetricLines(t *testing.T) {
	n := testChild(t, "serve")
	n.Start()
	n.WaitReady()
	got := n.MetricLines(t)
	want := strings.Split(childMetrics, "\n")
	if !slices.Equal(got, want) {
		t.Fatalf("MetricLines %q, want %q", got, want)
	}
	if m := n.Metrics(); m["go_goroutines"] != 7 || len(m) != 1 {
		t.Fatalf("Metrics %v, want only go_goroutines 7", m)
	}
}
