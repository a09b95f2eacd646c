package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/kcattest"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testnode"
)

// TestKcatSASLSSL is kcat (librdkafka's CLI, bin/kcat: Debian's kcat 1.7.1
// on librdkafka 2.0.2) over SASL_SSL with PLAIN, as docs/security.md shows
// it: `kcat -P` produces keyed records to three partitions and `kcat -C -e`
// reads every one of them back, verifying the broker's certificate against
// the test's CA; with a wrong password kcat fails with librdkafka's SASL
// authentication error. librdkafka before 2.10 starts SASL only when
// ApiVersions lists SaslHandshake v0; Shale listed v1 alone and every such
// client failed with "SASL Handshake not supported by broker".
//
// SCRAM is not tested with this kcat: librdkafka before 2.6.1 repeats the
// client nonce in its client-final message (librdkafka PR 4895), which
// Shale, like Kafka 4, refuses as RFC 5802 says. librdkafka over SASL_SSL
// with SCRAM-SHA-512 is TestConfluentSASLSSLWithSCRAMSHA512 (librdkafka
// 2.11).
func TestKcatSASLSSL(t *testing.T) {
	kcat := kcattest.Path(t)
	certs := testcerts.NewCA(t, "shale-kcat-ca").ServerFiles(t, "broker-0")
	users := filepath.Join(t.TempDir(), "plain-users")
	if err := os.WriteFile(users, []byte("dave:dave-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testnode.Start(t, t.TempDir(), testnode.WithListeners("PLAINTEXT", "SASL_SSL"), testnode.WithTLS(certs, ""), func(c *config.Broker) {
		c.SASLEnabledMechanisms, c.SASLPlainUsersFile = "PLAIN", users
	})
	ctx := proctest.Context(t, 60*time.Second)
	const topic = "kcat-sasl-ssl"
	createTopic(t, n.KafkaAddr(), topic, 3)

	run := func(stdin, pass string, args ...string) (string, string, error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		args = append([]string{"-b", n.ListenerAddr("SASL_SSL"),
			"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=PLAIN",
			"-X", "sasl.username=dave", "-X", "sasl.password=" + pass,
			"-X", "ssl.ca.location=" + certs.CA, "-X", "broker.address.family=v4"}, args...)
		cmd := exec.CommandContext(cctx, kcat, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if cctx.Err() != nil {
			t.Fatalf("kcat %s: did not exit in 30 s\nstderr:\n%s", strings.Join(args, " "), errb.String())
		}
		return out.String(), errb.String(), err
	}

	const records = 100
	var in strings.Builder
	want := make([]string, 0, records)
	for i := range records {
		fmt.Fprintf(&in, "k%d=v%d\n", i, i)
		want = append(want, fmt.Sprintf("k%d=v%d", i, i))
	}
	// -K=: each line is key=value; kcat waits for every delivery before it
	// exits and exits non-zero if one failed.
	if _, stderr, err := run(in.String(), "dave-secret", "-P", "-t", topic, "-K", "=",
		"-X", "acks=all"); err != nil {
		t.Fatalf("kcat -P: %v\nstderr:\n%s", err, stderr)
	}
	out, stderr, err := run("", "dave-secret", "-C", "-t", topic, "-o", "beginning", "-e",
		"-f", "%p %k=%s\n")
	if err != nil {
		t.Fatalf("kcat -C -e: %v\nstderr:\n%s", err, stderr)
	}
	var got []string
	parts := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		p, kv, _ := strings.Cut(line, " ")
		parts[p] = true
		got = append(got, kv)
	}
	sort.Strings(got)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("kcat -C -e read %d records, want each of the %d produced once:\n%s", len(got), records, out)
	}
	if len(parts) != 3 {
		t.Fatalf("the records came from partitions %v, want all 3 (the keys spread them)", parts)
	}

	// A wrong password: the PLAIN exchange fails, kcat reports it and, its
	// only broker down, exits non-zero.
	_, stderr, err = run("k=never\n", "not-dave", "-P", "-t", topic, "-K", "=")
	if err == nil {
		t.Fatalf("kcat -P with a wrong password succeeded\nstderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, "SASL authentication error: Authentication failed") {
		t.Fatalf("kcat -P with a wrong password: %v, want librdkafka's SASL authentication error\nstderr:\n%s", err, stderr)
	}
}
