package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/natsembed"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestDoctor runs shale doctor against a healthy cluster (three nodes on a
// three-server NATS cluster with --nats-replicas 3 and an S3 bucket): exit
// 0 and an ok line per check. Then one node stops, the bucket's server is
// killed and one NATS server shut down: exit 1, and each of the three is
// named in the output.
func TestDoctor(t *testing.T) {
	// The nodes' data dirs are on this machine's disk, whose use is not the
	// cluster's health: the disk thresholds are TestDoctorDisk's. (At 85%
	// used, as a shared test machine's disk can be, every node warned.)
	lim := defaultDoctorLimits
	defaultDoctorLimits.diskWarn, defaultDoctorLimits.diskError = 1.01, 1.02
	t.Cleanup(func() { defaultDoctorLimits = lim })
	t.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
	t.Setenv("AWS_REGION", objstoretest.Region)
	s3 := objstoretest.StartS3Server(t)
	bucket := s3.CreateBucket(t)
	dir := t.TempDir()
	servers, err := natsembed.StartCluster(3, filepath.Join(dir, "nats"), natsembed.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, s := range servers {
		t.Cleanup(s.Shutdown)
		urls = append(urls, s.ClientURL())
	}
	nodes := make([]*broker.Node, 3)
	var admins []string
	for i := range nodes {
		nodes[i] = testnode.Start(t, filepath.Join(dir, fmt.Sprintf("node-%d", i+1)), testnode.WithNATS(strings.Join(urls, ",")),
			testnode.WithNodeID(int32(i+1)), testnode.WithS3(s3.Endpoint, bucket), testnode.WithSession(2*time.Second),
			func(c *config.Broker) { c.NATSReplicas = 3 })
		admins = append(admins, nodes[i].AdminAddr())
	}
	cliOK(t, "topic", "create", "events", "-p", "6", "-r", "3", "--bootstrap", nodes[0].KafkaAddr())

	doctorRun := func(wantCode int) []finding {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run([]string{"doctor", "--admin", strings.Join(admins, ","), "--output", "json", "--timeout", "20s"}, &out, &errOut)
		var fs []finding
		if err := json.Unmarshal(out.Bytes(), &fs); err != nil {
			t.Fatalf("doctor --output json: %v\n%s\n%s", err, out.String(), errOut.String())
		}
		if code != wantCode {
			t.Fatalf("doctor exited %d, want %d:\n%s\n%s", code, wantCode, out.String(), errOut.String())
		}
		return fs
	}
	has := func(fs []finding, sev, check, text string) bool {
		for _, f := range fs {
			if f.Severity == sev && f.Check == check && strings.Contains(f.Subject+" "+f.Message, text) {
				return true
			}
		}
		return false
	}
	// A healthy cluster: wait for every ISR to be full first.
	var fs []finding
	if err := proctest.WaitFor(60*time.Second, func() bool {
		var out, errOut bytes.Buffer
		if run([]string{"doctor", "--admin", strings.Join(admins, ","), "--output", "json"}, &out, &errOut) != 0 {
			return false
		}
		return json.Unmarshal(out.Bytes(), &fs) == nil && has(fs, sevOK, "partitions", "fully in sync")
	}); err != nil {
		t.Fatalf("doctor never found the cluster healthy:\n%+v", fs)
	}
	fs = doctorRun(0)
	for _, check := range []string{"nodes", "nats", "bucket", "partitions", "clock", "disk"} {
		if !has(fs, sevOK, check, "") {
			t.Errorf("healthy cluster: no ok finding for %s: %+v", check, fs)
		}
	}
	if has(fs, sevError, "", "") {
		t.Errorf("healthy cluster with errors: %+v", fs)
	}

	// A node down, the bucket gone, one NATS server gone.
	down := nodes[2]
	ctx := proctest.Context(t, 30*time.Second)
	if err := down.Close(ctx); err != nil {
		t.Logf("close node 3: %v", err)
	}
	s3.Stop()
	servers[2].Shutdown()
	if err := proctest.WaitFor(60*time.Second, func() bool {
		var out, errOut bytes.Buffer
		run([]string{"doctor", "--admin", strings.Join(admins, ","), "--output", "json"}, &out, &errOut)
		return json.Unmarshal(out.Bytes(), &fs) == nil && has(fs, sevWarning, "nats", "shale-nats-3") &&
			has(fs, sevError, "nodes", admins[2]) && has(fs, sevError, "bucket", "probe")
	}); err != nil {
		t.Fatalf("doctor never named the node, the bucket and NATS:\n%+v", fs)
	}
	fs = doctorRun(1)
	if !has(fs, sevError, "nodes", "node 3") && !has(fs, sevWarning, "partitions", "under-replicated") {
		t.Errorf("the stopped node's partitions are not reported: %+v", fs)
	}
	var out, errOut bytes.Buffer
	run([]string{"doctor", "--admin", strings.Join(admins, ",")}, &out, &errOut)
	for _, want := range []string{"ERROR", "WARNING", "bucket", "nats", admins[2]} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor's table lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("shale doctor:\n%s", out.String())
}

// TestDoctorDisk: a data disk is ok below diskWarn's used fraction, a
// warning from it, an error from diskError or when tiering reports it full,
// and a warning when its size is unknown.
func TestDoctorDisk(t *testing.T) {
	for _, tc := range []struct {
		d    adminapi.DiskHealth
		want string
	}{
		{adminapi.DiskHealth{Path: "/d", TotalBytes: 100, FreeBytes: 16}, sevOK},
		{adminapi.DiskHealth{Path: "/d", TotalBytes: 100, FreeBytes: 15}, sevWarning},
		{adminapi.DiskHealth{Path: "/d", TotalBytes: 100, FreeBytes: 5}, sevError},
		{adminapi.DiskHealth{Path: "/d", TotalBytes: 100, FreeBytes: 90, Full: true}, sevError},
		{adminapi.DiskHealth{Path: "/d"}, sevWarning},
	} {
		var got []string
		doctorDisk(func(sev, check, subject, format string, args ...any) { got = append(got, sev) }, "node 1", tc.d, defaultDoctorLimits)
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%+v: findings %v, want one %s", tc.d, got, tc.want)
		}
	}
}
