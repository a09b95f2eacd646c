// Package kcattest finds kcat, librdkafka's command-line client, for the
// tests that drive it as a real Kafka client. `make tools` installs it into
// bin/ from Debian's packages (build/install-kcat.sh). The package imports
// no other Shale package.
package kcattest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Find returns the kcat binary: $SHALE_KCAT, then bin/kcat at the module
// root (where `make tools` installs it), then kcat on $PATH.
func Find() (string, error) {
	if p := os.Getenv("SHALE_KCAT"); p != "" {
		_, err := os.Stat(p)
		return p, err
	}
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, "bin", "kcat")
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return exec.LookPath("kcat")
}

// Path is Find for a test: without kcat the test fails, telling to run
// `make tools`, unless SHALE_SKIP_KCAT=1, which skips it.
func Path(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err != nil {
		if os.Getenv("SHALE_SKIP_KCAT") == "1" {
			t.Skipf("kcat not found and SHALE_SKIP_KCAT=1: skipping the kcat test (%v)", err)
		}
		t.Fatalf("kcat not found (%v): run `make tools` to install it into ./bin, or set SHALE_SKIP_KCAT=1 to skip the kcat tests", err)
	}
	return p
}
