package testnode

import (
	"fmt"
	"strings"
	"testing"
)

// TestLogTailKeepsTheLastLines: the tail keeps the last tailLines whole
// lines in order, across writes that split lines.
func TestLogTailKeepsTheLastLines(t *testing.T) {
	var l logTail
	for i := range tailLines + 50 {
		line := fmt.Sprintf("line %d\n", i)
		l.Write([]byte(line[:3]))
		l.Write([]byte(line[3:]))
	}
	l.Write([]byte("unfinished"))
	got := strings.Split(l.String(), "\n")
	if len(got) != tailLines || got[0] != "line 50" || got[len(got)-1] != fmt.Sprintf("line %d", tailLines+49) {
		t.Fatalf("%d lines, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
}
