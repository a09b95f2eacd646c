// Package proctest holds what Shale's process-level test packages
// (internal/e2e, internal/clustertest, internal/replicationtest,
// internal/tieringe2e) share: building the shale binary (RunWithBinary once
// per package, Binary for one test), running it as child processes (Node:
// start on fixed or free ports, wait until ready, SIGKILL, SIGTERM,
// SIGSTOP/SIGCONT, restart with the same arguments, captured output checked
// for panics and races), polling against a deadline, and reading the slog
// text lines the nodes print. What a package adds to a node (a node id, a
// Kafka client, a cluster) stays in that package, wrapped around Node.
package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// RunWithBinary is a TestMain body: it builds cmd/shale into a temporary
// directory (or uses the binary named by SHALE_E2E_BIN, to test a release
// build or a snapshot of a tree being edited), stores its path in *bin,
// runs the tests and returns their exit code. name prefixes error lines.
func RunWithBinary(m *testing.M, name string, bin *string) int {
	if b := os.Getenv("SHALE_E2E_BIN"); b != "" {
		*bin = b
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "shale-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "shale")
	cmd := exec.Command("go", buildArgs(*bin)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, name+": building shale:", err)
		return 1
	}
	return m.Run()
}

// ParseLogfmt splits one line of slog's text format into its key=value
// pairs. Quoted values are unquoted; a malformed quoted value is kept raw.
func ParseLogfmt(line string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(line); {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		eq := strings.IndexByte(line[i:], '=')
		if eq < 0 {
			break
		}
		key := line[i : i+eq]
		i += eq + 1
		var val string
		if i < len(line) && line[i] == '"' {
			j := i + 1
			for j < len(line) && line[j] != '"' {
				if line[j] == '\\' {
					j++
				}
				j++
			}
			raw := line[i:min(j+1, len(line))]
			if u, err := strconv.Unquote(raw); err == nil {
				val = u
			} else {
				val = raw
			}
			i = j + 1
		} else {
			j := strings.IndexByte(line[i:], ' ')
			if j < 0 {
				j = len(line) - i
			}
			val = line[i : i+j]
			i += j
		}
		if key != "" && !strings.ContainsRune(key, ' ') {
			out[key] = val
		}
	}
	return out
}
