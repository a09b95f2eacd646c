package compat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/internal/kcattest"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// kcatMember is one `kcat -G` process (librdkafka's balanced consumer)
// in a consumer group, printing one record value a line. Its output goes
// into the shared seenSet and its own list.
type kcatMember struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	done   chan struct{} // closed once the process has exited and its output is read
	stderr bytes.Buffer  // written by exec until done

	mu     sync.Mutex
	values []string
	err    error // the process's exit status, set before done closes
}

// startKcat runs `kcat -G grp topic` against addr for at most 90 s.
// librdkafka auto-commits what it has handed to kcat (every 200 ms, on a
// revocation and on close), so a member that leaves or is killed loses
// nothing that was not printed. extra are more kcat arguments (-e).
func startKcat(t *testing.T, kcat, addr, grp, topic string, seen *testnode.SeenSet, extra ...string) *kcatMember {
	t.Helper()
	args := append([]string{
		"-b", addr, "-G", grp, "-f", "%s\n", "-u", // -u: unbuffered, a line per record as it comes
		"-X", "auto.offset.reset=earliest",
		"-X", "partition.assignment.strategy=range",
		"-X", "session.timeout.ms=3000", "-X", "heartbeat.interval.ms=300",
		"-X", "auto.commit.interval.ms=200", "-X", "fetch.wait.max.ms=200",
	}, extra...)
	args = append(args, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	k := &kcatMember{cmd: exec.CommandContext(ctx, kcat, args...), cancel: cancel, done: make(chan struct{})}
	k.cmd.Stderr = &k.stderr
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(k.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			v := sc.Text()
			k.mu.Lock()
			k.values = append(k.values, v)
			k.mu.Unlock()
			seen.AddValue(v)
		}
		err := k.cmd.Wait()
		k.mu.Lock()
		k.err = err
		k.mu.Unlock()
	}()
	t.Cleanup(func() {
		k.cancel() // kills the process if it is still running
		<-k.done
		if t.Failed() {
			t.Logf("kcat %s stderr:\n%s", strings.Join(args, " "), k.stderr.String())
		}
	})
	return k
}

// consumed returns how many records this kcat printed so far.
func (k *kcatMember) consumed() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.values)
}

// signal sends sig (SIGTERM: close the consumer, commit and leave;
// SIGKILL: vanish, so that only the session timeout tells the coordinator)
// and waits for the process to end.
func (k *kcatMember) signal(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	if err := k.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return k.wait(t)
}

// wait waits for the process to end and returns its exit status.
func (k *kcatMember) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-k.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("kcat did not exit:\n%s", k.stderr.String())
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// TestGroupKcatAtLeastOnce: kcat -G (librdkafka) and franz-go consumers
// share one group (the eager range assignor, which both speak) while
// members join, leave gracefully and crash; with commits after printing or
// processing, no record is skipped. At the end a lone `kcat -G -e` starts
// from the group's committed offsets, prints only what came after them,
// and commits what it printed when it exits.
func TestGroupKcatAtLeastOnce(t *testing.T) {
	kcat := kcattest.Path(t)
	const topic, grp, per = "kc", "kcg", 200
	n := testnode.Start(t, t.TempDir())
	addr := n.KafkaAddr()
	adm := kadm.NewClient(testnode.Client(t, addr))
	testnode.CreateTopic(t, adm, topic, 4)
	seen := testnode.NewSeenSet()
	ends := testnode.Ends{}
	produce := func(tag string) { ends.Produce(t, addr, topic, per, tag) }
	atLeast := func(k *kcatMember, what string) {
		proctest.Eventually(t, 30*time.Second, what, func() bool { return k.consumed() > 0 })
	}

	m1 := testnode.StartMember(t, addr, grp, topic, kgo.RangeBalancer(), seen)
	produce("a")
	k1 := startKcat(t, kcat, addr, grp, topic, seen)
	testnode.WaitStable(t, adm, grp, 2)
	produce("b")
	atLeast(k1, "kcat 1 to consume")
	m2 := testnode.StartMember(t, addr, grp, topic, kgo.RangeBalancer(), seen)
	testnode.WaitStable(t, adm, grp, 3)
	produce("c")
	k1.signal(t, syscall.SIGKILL) // a crash: the session timeout removes it
	produce("d")
	testnode.WaitStable(t, adm, grp, 2)
	k2 := startKcat(t, kcat, addr, grp, topic, seen)
	testnode.WaitStable(t, adm, grp, 3)
	produce("e")
	atLeast(k2, "kcat 2 to consume")
	m1.Stop() // leaves
	testnode.WaitStable(t, adm, grp, 2)
	if err := k2.signal(t, syscall.SIGTERM); err != nil { // leaves, after a final commit
		t.Fatalf("kcat 2 on SIGTERM: %v", err)
	}
	testnode.WaitStable(t, adm, grp, 1)

	tags := []string{"a", "b", "c", "d", "e"}
	allCommitted := func() (miss, behind int) {
		miss = seen.Missing(tags, per)
		if miss > 0 {
			return miss, -1
		}
		got := testnode.Committed(t, adm, grp)
		for p, end := range ends {
			if o, ok := got.Lookup(topic, p); !ok || o.At != end {
				behind++
			}
		}
		return 0, behind
	}
	var miss, behind int
	proctest.Eventually(t, 60*time.Second, "every record consumed and committed", func() bool {
		miss, behind = allCommitted()
		return miss == 0 && behind == 0
	})
	m2.Stop()

	// A lone kcat -G -e resumes at the committed offsets, reads to the end
	// of every partition, exits and commits on the way out.
	produce("f")
	k3 := startKcat(t, kcat, addr, grp, topic, seen, "-e")
	if err := k3.wait(t); err != nil {
		t.Fatalf("kcat -e: %v\n%s", err, k3.stderr.String())
	}
	k3.mu.Lock()
	got := map[string]int{}
	for _, v := range k3.values {
		got[v]++
	}
	k3.mu.Unlock()
	for v, c := range got {
		if !strings.HasPrefix(v, "f-") || c != 1 {
			t.Fatalf("kcat -e printed %q %d times: it did not start at the committed offsets", v, c)
		}
	}
	for i := range per {
		if v := fmt.Sprintf("f-%d", i); got[v] != 1 {
			t.Fatalf("kcat -e skipped %s (printed %d records)", v, len(got))
		}
	}
	final := testnode.Committed(t, adm, grp)
	for p, end := range ends {
		if o, ok := final.Lookup(topic, p); !ok || o.At != end {
			t.Fatalf("after kcat -e, partition %d committed at %+v, want %d", p, o, end)
		}
	}
}
