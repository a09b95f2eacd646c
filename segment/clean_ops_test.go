package segment

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/shale-io/shale/segment/batch"
	"github.com/shale-io/shale/segment/vfs"
)

// TestReplaceSegmentFileOps pins the order of the filesystem calls by
// which ReplaceSegment changes the disk (writes, fsyncs, renames, removals,
// truncations) to testdata/replace_segment_ops.txt, for a cleaned segment
// whose .txnindex loses an entry, one whose .txnindex goes, and one whose
// .txnindex stays. The
// swap's crash safety rests on that order (the crash tests check the
// images it leaves; this pins the order itself, so that restructuring
// ReplaceSegment keeps it, issue 28). Run with -update after an intended
// change of the protocol.
func TestReplaceSegmentFileOps(t *testing.T) {
	var b strings.Builder
	for _, tc := range []struct {
		name  string
		clean func(seg []byte) []byte // the cleaned bytes of segment 0
	}{
		{"txnindex loses producer 1's entry", func(seg []byte) []byte { return emptyBatchAt(t, seg, 1) }},
		{"txnindex loses every entry", func(seg []byte) []byte { return emptyBatchAt(t, emptyBatchAt(t, seg, 1), 3) }},
		{"txnindex unchanged", func(seg []byte) []byte { return seg }},
	} {
		fmt.Fprintf(&b, "# %s\n", tc.name)
		for _, op := range replaceSegmentOps(t, tc.clean) {
			fmt.Fprintln(&b, op)
		}
	}
	golden := filepath.Join("testdata", "replace_segment_ops.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("ReplaceSegment's filesystem calls changed:\n%s\nwant (%s):\n%s", b.String(), golden, want)
	}
}

// replaceSegmentOps replaces the first segment of abortFixture's log by
// clean of its bytes, on a memory filesystem, and returns the calls that
// changed the disk meanwhile, one line each ("kind file"; "dir" for the
// log's directory; consecutive writes of one file as one line).
func replaceSegmentOps(t *testing.T, clean func(seg []byte) []byte) []string {
	t.Helper()
	var (
		mu        sync.Mutex
		recording bool
		ops       []string
	)
	kinds := map[vfs.OpKind]string{vfs.OpWrite: "write", vfs.OpSync: "sync", vfs.OpRename: "rename",
		vfs.OpRemove: "remove", vfs.OpTruncate: "truncate", vfs.OpMkdir: "mkdir"}
	fs := vfs.WithErrors(newCrashFS(t), func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		kind, ok := kinds[op.Kind]
		if !recording || !ok {
			return nil
		}
		name := path.Base(op.Path)
		if op.Path == crashDir {
			name = "dir"
		}
		line := kind + " " + name
		if kind == "write" && len(ops) > 0 && ops[len(ops)-1] == line {
			return nil
		}
		ops = append(ops, line)
		return nil
	})
	l, _ := abortFixture(t, crashDir, crashConfig(fs))
	defer l.Close()
	if err := l.Flush(); err != nil { // nothing left for the background flusher
		t.Fatal(err)
	}
	seg, err := l.ReadBytes(0, 1<<20, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	cleaned := clean(seg)
	mu.Lock()
	recording = true
	mu.Unlock()
	if err := l.ReplaceSegment(0, cleaned); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	recording = false
	return ops
}

// emptyBatchAt returns seg with the batch at offset empty, as compaction
// leaves a marker whose transaction has no record left.
func emptyBatchAt(t *testing.T, seg []byte, offset int64) []byte {
	t.Helper()
	var out []byte
	if err := batch.Split(seg, func(h *batch.Header, raw []byte) error {
		if h.BaseOffset == offset {
			raw = batch.EmptyOutsideTxn(raw)
		}
		out = append(out, raw...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
