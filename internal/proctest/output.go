package proctest

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/shale-io/shale/internal/proctest/child"
)

// crashMarks are what a Go program prints when it panics, dies of a fatal
// runtime error, is dumped by SIGQUIT, or (built with -race) races.
var crashMarks = []string{"panic:", "panicked", "fatal error:", "goroutine 1 [", "SIGQUIT: quit", "DATA RACE"}

// Output is everything every run has printed so far, stdout and stderr
// interleaved, each run headed by its marker line.
func (n *Node) Output() string { return n.out.String() }

// Tail is the last 8 KiB of Output, for failure messages.
func (n *Node) Tail() string {
	s := n.out.String()
	if len(s) > tailBytes {
		s = "...\n" + s[len(s)-tailBytes:]
	}
	return s
}

// CheckNoPanic fails the test if any run's output shows a Go panic, a fatal
// runtime error, a goroutine dump or a data race, quoting the output around
// the first one.
func (n *Node) CheckNoPanic() {
	n.t.Helper()
	if mark, excerpt, ok := crashIn(n.out.String()); ok {
		n.t.Fatalf("%s output contains %q:\n%s", n.name, mark, excerpt)
	}
}

// mainStack ends a live run that hangs with SIGQUIT, for the Go runtime's
// dump of every goroutine, and returns the stack of its main goroutine (the
// one a start that never became ready is blocked in), which a tail of the
// dump leaves out. It is for a failure message: "" if the run is gone.
func (n *Node) mainStack() string {
	before := len(n.out.String())
	if _, err := n.proc.Stop(syscall.SIGQUIT, 5*time.Second); errors.Is(err, child.ErrNotRunning) {
		return ""
	}
	return "\n" + goroutineIn(n.out.String()[before:], 1)
}

// goroutineIn is goroutine id's stack in the goroutine dump out, or a note
// that it has none. A dump's header is "goroutine 1 [state]:", or with the
// runtime's detail of a signal's dump "goroutine 1 gp=... m=... [state]:".
func goroutineIn(out string, id int) string {
	head := fmt.Sprintf("goroutine %d ", id)
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, head) && strings.Contains(line, "[") {
			out = out[strings.Index(out, line):]
			if j := strings.Index(out, "\n\n"); j >= 0 {
				out = out[:j]
			}
			return out
		}
	}
	return fmt.Sprintf("(no goroutine %d in the run's last output)", id)
}

// crashIn finds the first crash mark (in crashMarks' order) in out and
// returns it with up to 2000 bytes before it and 4000 from it.
func crashIn(out string) (mark, excerpt string, ok bool) {
	for _, m := range crashMarks {
		if i := strings.Index(out, m); i >= 0 {
			return m, out[max(0, i-2000):min(len(out), i+4000)], true
		}
	}
	return "", "", false
}

// LogLines returns the slog text lines of every run whose msg is msg, each
// parsed by ParseLogfmt, in the order printed.
func (n *Node) LogLines(msg string) []map[string]string {
	return logLines(n.out.String(), msg)
}

// CountLines is how many slog text lines of every run have msg msg.
func (n *Node) CountLines(msg string) int { return len(n.LogLines(msg)) }

func logLines(out, msg string) []map[string]string {
	var lines []map[string]string
	for line := range strings.SplitSeq(out, "\n") {
		if !strings.Contains(line, msg) {
			continue
		}
		if kv := ParseLogfmt(line); kv["msg"] == msg {
			lines = append(lines, kv)
		}
	}
	return lines
}

// TookRole reports whether the node logged msg ("became leader", "became
// follower") for partition of topic in leader epoch epoch.
func (n *Node) TookRole(msg, topic string, partition, epoch int32) bool {
	for _, kv := range n.LogLines(msg) {
		if kv["topic"] == topic && kv["partition"] == fmt.Sprint(partition) && kv["leader_epoch"] == fmt.Sprint(epoch) {
			return true
		}
	}
	return false
}
