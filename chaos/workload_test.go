package chaos

import (
	"net"
	"testing"
)

// TestWorkloadCloseStopsIt: a run that ends before it stops its workload
// (a warm-up that fails, a fault phase cut short) still returns: the
// workload's close cancels its goroutines' contexts and then waits for
// them. It used to wait first, for ever, as nothing else cancelled them.
// The workload's clients point at a closed port on 127.0.0.1; nothing
// connects.
func TestWorkloadCloseStopsIt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seeds := []string{ln.Addr().String()}
	ln.Close()
	cfg := Config{}
	cfg.defaults()
	cfg.Rate = 1 // the first record is due after a second: none is buffered at close
	rec := newRecorder(nil)
	topics := workloadTopics()
	w, err := newWorkload(&cfg, seeds, topics, rec)
	if err != nil {
		t.Fatal(err)
	}
	w.start(seeds, topics, rec)
	w.close() // before the fix: blocks until the test binary's timeout
	for _, p := range w.producers {
		<-p.done
	}
	for _, cn := range w.consumers {
		<-cn.done
	}
	for _, gc := range w.groups {
		<-gc.done
	}
	<-w.trimmed
}
