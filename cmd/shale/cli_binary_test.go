package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildShale builds this command into a temporary directory.
func buildShale(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "shale")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// shaleExec runs the built binary with stdin and SHALE_BOOTSTRAP=addr.
func shaleExec(t *testing.T, bin, addr, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SHALE_BOOTSTRAP="+addr)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("shale %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestBinary runs the real binary: the bootstrap address comes from
// SHALE_BOOTSTRAP, records from stdin. The commands are README.md's
// quickstart, word for word.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildShale(t)
	addr := startCLINode(t)
	ok := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := shaleExec(t, bin, addr, stdin, args...)
		if code != 0 {
			t.Fatalf("shale %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	ok("", "topic", "create", "quickstart", "-p", "1")
	golden(t, "binary_produce.txt", ok("k1=hello\nk2=world\n", "produce", "quickstart", "--key-separator", "=", "--header", "app=demo"))
	golden(t, "binary_consume.txt", ok("", "consume", "quickstart", "--until", "end", "--format", `%k %v %o %p %t %h\n`))
	// Help goes to stdout (cobra's and GNU's convention: shale produce -h | less).
	if out, errOut, code := shaleExec(t, bin, addr, "", "produce", "-h"); code != 0 || errOut != "" || !strings.Contains(out, "--key-separator") {
		t.Fatalf("produce -h: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := shaleExec(t, bin, addr, "", "consume"); code != 2 || out != "" {
		t.Fatalf("consume without a topic: exit %d, stdout %q", code, out)
	}
	t.Run("progress", func(t *testing.T) { testProgressOnTerminal(t, bin, addr) })
	if _, errOut, code := shaleExec(t, bin, "127.0.0.1:1", "", "topic", "list", "--timeout", "2s"); code != 1 || errOut == "" {
		t.Fatalf("unreachable node: exit %d: %s", code, errOut)
	}
}
