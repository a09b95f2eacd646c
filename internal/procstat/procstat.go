// Package procstat reads a process's run state and CPU time from Linux's
// /proc/<pid>/stat, for the test harnesses (proctest pauses a node and waits
// until it is stopped, loadbench and the benchmarks measure a child's CPU).
// It imports no Shale package and not testing, so a non-test package such as
// loadbench can use it.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 a second on every Linux architecture Go supports.
const ClockTick = 10 * time.Millisecond

// ErrMalformed is returned, wrapped, for text that is not a /proc stat line.
var ErrMalformed = errors.New("procstat: malformed /proc stat")

// Stat is the part of a /proc/<pid>/stat line the harnesses use.
type Stat struct {
	State byte          // field 3: 'R', 'S', 'D', 'T' (stopped), 't' (traced), 'Z', ...
	CPU   time.Duration // fields 14 and 15, utime+stime; a process's counts all its threads
	// System is field 15, stime: the part of CPU spent in the kernel on the
	// process's behalf (system calls, page faults).
	System time.Duration
}

// Parse parses the text of a /proc/<pid>/stat (or /proc/<pid>/task/<tid>/stat)
// file. The command name (field 2) may hold spaces and parentheses, so fields
// are counted from the last ')'.
func Parse(text string) (Stat, error) {
	i := strings.LastIndexByte(text, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("%w: no ')' in %q", ErrMalformed, text)
	}
	f := strings.Fields(text[i+1:]) // f[0] is field 3 (state); utime, stime are fields 14, 15
	if len(f) < 13 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("%w: short %q", ErrMalformed, text)
	}
	var ticks [2]int64
	for i, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Stat{}, fmt.Errorf("%w: field %q: %v", ErrMalformed, s, err)
		}
		ticks[i] = v
	}
	return Stat{State: f[0][0], CPU: time.Duration(ticks[0]+ticks[1]) * ClockTick, System: time.Duration(ticks[1]) * ClockTick}, nil
}

// Read reads and parses /proc/<pid>/stat.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return Parse(string(b))
}

// Stopped reports whether a state is stopped by a signal ('T') or stopped
// while traced ('t').
func Stopped(state byte) bool { return state == 'T' || state == 't' }

// AllThreadsStopped reports whether every thread of pid is stopped, from
// /proc/<pid>/task/*/stat; false when pid or a thread cannot be read (one
// that just exited: look again). kill(2) only queues SIGSTOP, so a caller
// that paused a process polls this.
func AllThreadsStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		st, err := Parse(string(b))
		if err != nil || !Stopped(st.State) {
			return false
		}
	}
	return true
}
