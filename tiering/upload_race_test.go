package tiering

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/shale-io/shale/infra/config"
)

// An upload sends the bytes of the files it found when it started, as one
// version of the segment: a compaction that swaps the segment's files
// between two of its Puts (here, right after the .log Put) must not make
// it upload the old .log with the new .index. Failed before the upload
// opened its files ahead of CopyStarted (it opened each by path at its Put:
// the .index object was the compacted segment's, or the upload failed).
func TestUploadSurvivesACompactionSwap(t *testing.T) {
	f := newFixture(t, map[string]string{config.CleanupPolicy: "compact,delete",
		config.LocalRetentionBytes: "-1", config.LocalRetentionMs: "-1", config.IndexIntervalBytes: "100"})
	f.produce(t, 60)
	segs := f.rep.Log().Segments()
	if len(segs) < 3 {
		t.Fatalf("only %d segments", len(segs))
	}
	base := segs[0].BaseOffset
	before := map[string][]byte{}
	for _, suf := range []string{".log", ".index", ".timeindex"} {
		b, err := os.ReadFile(f.rep.SegmentPath(base, suf))
		if err != nil {
			t.Fatal(err)
		}
		before[suf] = b
	}
	var once sync.Once
	compacted := 0
	f.bucket.mu.Lock()
	f.bucket.afterPut = func(key string) {
		if !strings.HasSuffix(key, ".log") || !strings.Contains(key, "/00000000000000000000-") {
			return
		}
		once.Do(func() {
			n, err := f.rep.Compact(f.now)
			if err != nil {
				t.Errorf("compaction: %v", err)
			}
			compacted = n
		})
	}
	f.bucket.mu.Unlock()
	m := f.manager(t, nil)
	m.RunOnce(testCtx(t), false)
	if compacted == 0 {
		t.Fatal("the compaction rewrote nothing: the test needs a swap")
	}
	after, err := os.ReadFile(f.rep.SegmentPath(base, ".index"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(after, before[".index"]) {
		t.Fatal("the compaction left the .index as it was: the test needs a swap")
	}
	var found bool
	for _, rec := range f.meta.ListRemoteSegments(f.topic.ID, 0) {
		if rec.BaseOffset != base {
			continue
		}
		found = true
		for kind, suf := range map[Kind]string{KindLog: ".log", KindIndex: ".index", KindTimeIndex: ".timeindex"} {
			rc, err := f.fs.GetRange(context.Background(), ObjectKey(rec, kind), 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, before[suf]) {
				t.Errorf("remote %s (%d bytes) is not the segment's %s as the upload found it (%d bytes)", kind, len(got), suf, len(before[suf]))
			}
		}
	}
	if !found {
		t.Fatalf("segment %d not uploaded (stats %+v)", base, m.Stats())
	}
}
