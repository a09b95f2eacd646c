package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return m, s
}

// runOnTTY runs the binary with stderr on a terminal and returns stdout and
// what the terminal showed.
func runOnTTY(t *testing.T, bin, addr string, args ...string) (string, string) {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SHALE_BOOTSTRAP="+addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // the child holds its own copy
	var tty bytes.Buffer
	done := make(chan struct{})
	go func() { // reads until the child's end closes (EIO)
		defer close(done)
		io.Copy(&tty, master)
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shale %v: %v\n%s", args, err, tty.String())
	}
	<-done
	return out.String(), tty.String()
}

// testProgressOnTerminal checks that bulk produce and a bounded replay draw
// a progress bar on a terminal, and only there. TestBinary runs it.
func testProgressOnTerminal(t *testing.T, bin, addr string) {
	if _, errOut, code := shaleExec(t, bin, addr, "", "topic", "create", "bulk", "-p", "2"); code != 0 {
		t.Fatal(errOut)
	}
	var lines strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&lines, "record-%04d\n", i)
	}
	input := filepath.Join(t.TempDir(), "bulk.txt")
	if err := os.WriteFile(input, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, tty := runOnTTY(t, bin, addr, "produce", "bulk", input)
	if !strings.Contains(out, "produced 2000 records") || !strings.Contains(tty, "100%  24000/24000 bytes") || !strings.Contains(tty, "ETA") {
		t.Fatalf("produce on a terminal:\nstdout %q\ntty %q", out, tty)
	}
	out, tty = runOnTTY(t, bin, addr, "consume", "bulk", "--until", "end", "-f", `%v\n`)
	if strings.Count(out, "\n") != 2000 || !strings.Contains(tty, "100%  2000/2000 records") {
		t.Fatalf("consume on a terminal: %d lines\ntty %q", strings.Count(out, "\n"), tty)
	}
	if strings.Contains(out, "\r") || strings.Contains(out, "%") {
		t.Fatal("the progress bar leaked into stdout")
	}
	// Not a terminal: no bar.
	if _, errOut, code := shaleExec(t, bin, addr, "", "consume", "bulk", "--until", "end"); code != 0 || errOut != "" {
		t.Fatalf("consume into a pipe: exit %d, stderr %q", code, errOut)
	}
}
