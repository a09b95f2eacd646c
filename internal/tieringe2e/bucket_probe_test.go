package tieringe2e

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
)

// readyOrExit waits until the live run of n is ready (GET /readyz answers
// 200) or has exited, whichever comes first, and reports which; it fails
// the test if neither happens within proctest.ReadyTimeout.
func readyOrExit(t *testing.T, n *proctest.Node) (ready bool) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(proctest.ReadyTimeout)
	for ; ; <-tick.C {
		if !n.Alive() {
			return false
		}
		if resp, err := hc.Get("http://" + n.Admin() + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("neither ready nor exited after %v:\n%s", proctest.ReadyTimeout, n.Tail())
		}
	}
}

// refusesToStart starts n and fails the test unless the run exits non-zero
// before it is ready, with output that holds every one of want.
func refusesToStart(t *testing.T, n *proctest.Node, want ...string) {
	t.Helper()
	n.Start()
	if readyOrExit(t, n) {
		t.Fatalf("the node reported ready:\n%s", n.Tail())
	}
	if code := n.WaitExit(10 * time.Second); code == 0 {
		t.Fatalf("the node exited 0:\n%s", n.Tail())
	}
	out := n.Tail()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("the output does not say %q:\n%s", w, out)
		}
	}
}

// TestStartRefusesUnusableBucketS3: `shale serve` with a bucket that does
// not exist, or with credentials the S3 server (versitygw) refuses, exits
// non-zero before it is ready, saying which bucket and the S3 error (issue
// 22 item 9: it used to start and report ready, with a WARN five seconds
// later as the only sign). With a good bucket it starts, and leaves no
// probe object behind. With the S3 server down (an outage, not a wrong
// setting) it starts and logs the outage as an ERROR.
func TestStartRefusesUnusableBucketS3(t *testing.T) {
	env := startS3(t)
	serve := func(bucket string, extraEnv ...string) *proctest.Node {
		return proctest.Serve(t, proctest.Binary(t), t.TempDir(), []string{"--nats-listen", proctest.FreeAddr(t),
			"--s3-endpoint", env.srv.Endpoint, "--s3-bucket", bucket, "--s3-region", objstoretest.Region,
			"--s3-path-style=true", "--s3-prefix", "cluster-a"},
			proctest.Name("tieringe2e"), proctest.Env(append([]string{"AWS_EC2_METADATA_DISABLED=true"}, extraEnv...)...))
	}

	t.Run("missing bucket", func(t *testing.T) {
		refusesToStart(t, serve("no-such-bucket"), "s3://no-such-bucket", "NoSuchBucket")
	})
	t.Run("wrong credentials", func(t *testing.T) {
		refusesToStart(t, serve(env.bucket, "AWS_SECRET_ACCESS_KEY=not-the-secret"), "s3://"+env.bucket, "SignatureDoesNotMatch")
	})
	t.Run("good bucket", func(t *testing.T) {
		n := serve(env.bucket)
		n.Start()
		n.WaitReady()
		probes := filepath.Join(env.srv.Dir, env.bucket, "cluster-a", "shale-probe")
		entries, err := os.ReadDir(probes)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if len(entries) > 0 {
			t.Fatalf("probe objects left in the bucket: %v", entries)
		}
	})
	t.Run("server down", func(t *testing.T) {
		env.srv.Stop()
		defer env.srv.Restart(t)
		n := serve(env.bucket)
		n.Start()
		n.WaitReady()
		if got := n.CountLines("cold tier bucket unreachable at start: starting; uploads and cold reads wait for it"); got != 1 {
			t.Fatalf("%d lines say the bucket is unreachable, want 1:\n%s", got, n.Tail())
		}
	})
}

// TestStartRefusesUnwritableFilesystemBucket: `shale serve` whose
// filesystem bucket (<data dir>/bucket) cannot be written exits non-zero
// before it is ready, naming the bucket's directory. The directory is made
// read-only with chmod, or, for root (whom modes do not stop), immutable
// with chattr +i.
func TestStartRefusesUnwritableFilesystemBucket(t *testing.T) {
	dataDir := t.TempDir()
	bucket := filepath.Join(dataDir, "bucket")
	if err := os.Mkdir(bucket, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", bucket).CombinedOutput(); err != nil {
			t.Skipf("running as root and chattr +i failed (%v: %s): cannot make a directory root may not write", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", bucket).Run() })
	} else {
		if err := os.Chmod(bucket, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(bucket, 0o755) })
	}
	n := proctest.Serve(t, proctest.Binary(t), dataDir, []string{"--nats-listen", proctest.FreeAddr(t)}, proctest.Name("tieringe2e"))
	refusesToStart(t, n, "cold tier bucket "+bucket, "write shale-probe/node-")
}
