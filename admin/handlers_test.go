package admin

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
)

// TestWaitAtMost: a handler's reconcile answers once the replica manager
// is done, or after its bound while the manager goes on (a topic of 10,000
// partitions took 20 s to open, past the client's request timeout, which
// then retried CreateTopics and was told the topic exists).
func TestWaitAtMost(t *testing.T) {
	var ran atomic.Bool
	if !waitAtMost(time.Minute, func() { ran.Store(true) }) || !ran.Load() {
		t.Fatal("a quick reconcile was not waited for")
	}
	release := make(chan struct{})
	var finished atomic.Bool
	if waitAtMost(10*time.Millisecond, func() { <-release; finished.Store(true) }) {
		t.Fatal("waitAtMost reported a blocked reconcile as done")
	}
	if finished.Load() {
		t.Fatal("the reconcile finished before it was released")
	}
	close(release)
	if err := proctest.WaitFor(time.Minute, finished.Load); err != nil {
		t.Fatal("the reconcile left behind did not go on to its end: ", err)
	}
}
