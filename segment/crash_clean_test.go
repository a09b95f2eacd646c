package segment

import (
	"bytes"
	"encoding/binary"
	"path"
	"sync"
	"testing"

	"github.com/shale-io/shale/segment/vfs"
)

// TestCrashAtEverySyncOfReplaceSegment crashes the filesystem just before
// each fsync a compaction's ReplaceSegment makes (the cleaned file, the
// directory after each rename, the new segment's index files) and after
// it returns, then recovers each image: the replaced segment holds either
// all of its old batches or all of the cleaned ones, never a mix, a gap or
// nothing, and every offset flushed before is still there (issue 28: the
// swap protocol had unit tests of its named crash points only).
func TestCrashAtEverySyncOfReplaceSegment(t *testing.T) {
	fs := newCrashFS(t)
	var (
		mu     sync.Mutex
		images []crashImage
		phase  = "open"
	)
	snap := func(at string) {
		mu.Lock()
		defer mu.Unlock()
		images = append(images, crashImage{fs: fs.CrashClone(), at: at})
	}
	l := openLog(t, crashDir, crashConfig(fs))
	old := buildBatch(t, batchSpec{records: 3, valueSize: 100})
	for range 4 {
		mustAppend(t, l, append([]byte(nil), old...), 0)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, append([]byte(nil), old...), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	durable := l.LogEndOffset()
	before, err := l.ReadBytes(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	seg0 := before[:4*len(old)]
	// The cleaned segment: the same offsets in batches of other (smaller)
	// values, as a cleaner that dropped bytes but no batch would write.
	small := buildBatch(t, batchSpec{records: 3, valueSize: 10})
	var cleaned []byte
	for i := range 4 {
		b := append([]byte(nil), small...)
		binary.BigEndian.PutUint64(b[0:8], uint64(3*i)) // base offset, outside the CRC
		cleaned = append(cleaned, b...)
	}

	restoreFsync := beforeFsync(t, func(f vfs.File) {
		mu.Lock()
		at := "before fsync of " + path.Base(f.Name()) + " in " + phase
		mu.Unlock()
		snap(at)
	})
	snap("before the replacement")
	phase = "replace"
	if err := l.ReplaceSegment(0, cleaned); err != nil {
		t.Fatal(err)
	}
	snap("after the replacement")
	restoreFsync()
	got, err := l.ReadBytes(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(cleaned)], cleaned) {
		t.Fatal("the live log does not read the cleaned segment")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(images) < 4 {
		t.Fatalf("only %d crash images", len(images))
	}
	tail := before[len(seg0):]
	oldSeen, newSeen := false, false
	for _, img := range images {
		r, err := Open(crashDir, crashConfig(img.fs))
		if err != nil {
			t.Fatalf("%s: open after crash: %v", img.at, err)
		}
		if leo := r.LogEndOffset(); leo < durable {
			t.Fatalf("%s: recovered LEO %d, flushed up to %d", img.at, leo, durable)
		}
		data, err := r.ReadBytes(0, 1<<20, r.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("%s: read: %v", img.at, err)
		}
		switch {
		case bytes.Equal(data, before):
			oldSeen = true
		case bytes.Equal(data, append(append([]byte(nil), cleaned...), tail...)):
			newSeen = true
		default:
			t.Fatalf("%s: recovered %d bytes, neither the old segment (%d) nor the cleaned one (%d) followed by the rest",
				img.at, len(data), len(before), len(cleaned)+len(tail))
		}
		r.Close()
	}
	if !oldSeen || !newSeen {
		t.Fatalf("over %d images: old segment recovered %v, cleaned %v; want both", len(images), oldSeen, newSeen)
	}
	t.Logf("%d crash images recovered", len(images))
}
