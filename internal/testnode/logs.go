package testnode

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
)

// tailLines is how many of its last log lines a node keeps for a failed
// test.
const tailLines = 300

// logTail keeps the last tailLines lines written to it. Safe for
// concurrent use.
type logTail struct {
	mu    sync.Mutex
	lines []string
	next  int    // where the next line goes once lines is full
	part  []byte // a line not yet ended
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	buf := append(l.part, p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		line := string(buf[:i])
		buf = buf[i+1:]
		if len(l.lines) < tailLines {
			l.lines = append(l.lines, line)
			continue
		}
		l.lines[l.next] = line
		l.next = (l.next + 1) % tailLines
	}
	l.part = append(l.part[:0], buf...)
	return len(p), nil
}

// String is the kept lines, oldest first.
func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append(append([]string(nil), l.lines[l.next:]...), l.lines[:l.next]...)
	return strings.Join(out, "\n")
}

// testLogger is the logger of one node (or NATS server) of test t: with
// SHALE_TEST_LOG set, everything at debug level on stderr; otherwise info
// and above into a tail that t's log shows, under name, only if the test
// fails, so that a failure on a clean clone says what the nodes did.
func testLogger(t testing.TB, name string) *slog.Logger {
	if os.Getenv("SHALE_TEST_LOG") != "" {
		return Logger()
	}
	tail := &logTail{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s: the last %d log lines:\n%s", name, tailLines, tail.String())
		}
	})
	return slog.New(slog.NewTextHandler(tail, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
