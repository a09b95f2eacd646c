package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeBuildStampsRevision builds the binary as `make build` does, from
// this repository, and checks that `shale version` names the checked-out
// commit: GOFLAGS=-buildvcs=false (set on some machines) must not hide it.
func TestMakeBuildStampsRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	// The go command finds a git checkout by a .git directory; a linked
	// worktree (git worktree add) has a .git file, and go builds it
	// without VCS stamping and without an error, even with
	// -buildvcs=true. A clean clone (CI) stamps.
	if fi, err := os.Stat("../../.git"); err == nil && !fi.IsDir() {
		t.Skip("a git worktree: the go command does not stamp VCS information there")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "build -buildvcs=auto -o $(BIN)/shale ./cmd/shale") {
		t.Fatal("the Makefile's build rule no longer builds with -buildvcs=auto; update this test with it")
	}
	bin := filepath.Join(t.TempDir(), "shale")
	cmd := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, ".")
	cmd.Env = append(cmd.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("shale version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), strings.TrimSpace(string(head))) {
		t.Fatalf("shale version does not name HEAD %s:\n%s", head, out)
	}
}
