package chaos

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
)

// make test's chaos run.
const (
	smokeSeed     = 7
	smokeDuration = 40 * time.Second
)

// TestMain lets this test binary serve as the suite's NATS child process
// (MaybeRunChild), as cmd/shale-chaos does.
func TestMain(m *testing.M) {
	MaybeRunChild()
	os.Exit(m.Run())
}

// TestSmokeSchedule is make test's chaos run: the smoke schedule (kill -9
// and restart, SIGSTOP/SIGCONT, a rolling restart, S3 5xx, latency and a
// paused S3 server, preferred-leader elections) for 40 s with a fixed
// seed, on three shale processes, one NATS server and versitygw. Any
// violation fails it; so does a run in which the faults did not happen or
// the workload did not get through.
func TestSmokeSchedule(t *testing.T) {
	bin := proctest.Binary(t)
	vgw, err := objstoretest.VersityGWPath()
	if err != nil {
		t.Fatalf("versitygw not found (%v): run `make tools`", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.MkdirTemp("", "shale-chaos-smoke-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	v, err := Run(ctx, Config{Schedule: "smoke", Seed: smokeSeed, Duration: smokeDuration, Out: out,
		Shale: bin, VersityGW: vgw, Self: self, Log: testWriter{t}})
	if err != nil {
		t.Fatalf("run: %v (files in %s)", err, out)
	}
	t.Log(v.Summary())
	for _, vi := range v.Violations {
		t.Errorf("%v", vi)
	}
	if v.Faults < 5 || v.FaultKinds["kill"]+v.FaultKinds["pause"]+v.FaultKinds["rolling"] == 0 {
		t.Errorf("only %d faults ran (%v): the schedule did not exercise the cluster", v.Faults, v.FaultKinds)
	}
	for _, w := range v.Windows {
		// An admin request may time out on a paused node; a fault that
		// could not be applied or healed may not.
		if w.Err != "" && w.Kind.track() != "ops" {
			t.Errorf("fault %s %s: %s", w.Kind, w.Target, w.Err)
		}
	}
	// Both groups committed, and the KIP-848 group's partitions changed
	// hands (its 3 partitions were started on more than once each).
	for _, g := range []string{groupName, group848Name} {
		if v.GroupCommits[g] == 0 {
			t.Errorf("group %s: no acknowledged commit", g)
		}
	}
	if r := v.GroupResumes[group848Name]; r <= 2*int(workloadTopics()[0].parts) {
		t.Errorf("group %s: partitions started on %d times: the KIP-848 members did not hand partitions over", group848Name, r)
	}
	t.Logf("group commits %v, resumes %v", v.GroupCommits, v.GroupResumes)
	// The share group's members got and accepted records.
	if v.ShareDeliveries == 0 || v.ShareConfirmed == 0 {
		t.Errorf("share group: %d deliveries, %d acceptances confirmed", v.ShareDeliveries, v.ShareConfirmed)
	}
	t.Logf("share group: %d deliveries, %d acceptances confirmed", v.ShareDeliveries, v.ShareConfirmed)
	if v.Acked < 500 {
		t.Errorf("acked %d records: too few to judge", v.Acked)
	}
	if t.Failed() {
		t.Logf("run directory kept: %s", out)
		return
	}
	os.RemoveAll(out)
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-min(1, len(p))]))
	return len(p), nil
}
