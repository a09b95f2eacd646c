package partition

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/segment/batch"
)

// openShared opens partition p of topic under logDir, registered with ck,
// as Open leaves it (a follower at epoch 0), with small index files.
func openShared(t *testing.T, logDir string, ck *HWCheckpoints, topic string, p int32, id [16]byte) *Replica {
	t.Helper()
	dir := filepath.Join(logDir, fmt.Sprintf("%s-%d", topic, p))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Open(Options{Dir: dir, Topic: topic, Partition: p, Config: config.ResolveTopic(smallIndexes, nil),
		HWCheckpoints: ck, TopicID: id})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// leadShared is openShared, then leader at epoch 0.
func leadShared(t *testing.T, logDir string, ck *HWCheckpoints, topic string, p int32, id [16]byte) *Replica {
	t.Helper()
	r := openShared(t, logDir, ck, topic, p, id)
	r.SetLeadership(true, 0)
	return r
}

// smallIndexes keeps the preallocated index files small: the tests copy
// every file of a log dir.
var smallIndexes = map[string]string{"segment.index.bytes": "4096"}

// crashCopyLogDir copies a log dir as kill -9 leaves it (crashCopy for each
// partition directory, plus the log dir's own files).
func crashCopyLogDir(t *testing.T, logDir string) string {
	t.Helper()
	to := t.TempDir()
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		src := filepath.Join(logDir, e.Name())
		if e.IsDir() {
			if err := os.Rename(crashCopy(t, src), filepath.Join(to, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// Replicas write the shared checkpoint while the copy runs.
		crashCopyFile(t, src, filepath.Join(to, e.Name()))
	}
	return to
}

// TestSharedHWCheckpointOneFile: the replicas of one log dir write one
// checkpoint between them (issue 23: a file, two fsyncs and a rename per
// partition every interval before), no per-partition file, and each
// reopens after a crash with its own high watermark.
func TestSharedHWCheckpointOneFile(t *testing.T) {
	logDir := t.TempDir()
	ck := OpenHWCheckpoints(logDir, HWCheckpointOptions{})
	id := [16]byte{1, 2, 3}
	const n = 12
	var reps []*Replica
	for p := range int32(n) {
		r := leadShared(t, logDir, ck, "t", p, id)
		defer r.Close()
		if _, err := r.AppendLeader(build(t, batch.NoProducer(), int(p)+1)); err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	if err := ck.MaybeWrite(); err != nil { // the first one is due at once
		t.Fatal(err)
	}
	entries, err := decodeHWCheckpoint(mustRead(t, filepath.Join(logDir, HWCheckpointFile)))
	if err != nil || len(entries) != n {
		t.Fatalf("log dir checkpoint: %d entries, %v; want %d", len(entries), err, n)
	}
	for _, r := range reps {
		if _, err := os.Stat(filepath.Join(r.dir, HWCheckpointFile)); !os.IsNotExist(err) {
			t.Fatalf("%s: a per-partition checkpoint exists (%v)", r.dir, err)
		}
		if e := entries[hwKey{"t", r.partition}]; e.hw != int64(r.partition)+1 || e.topicID != id {
			t.Fatalf("entry of t-%d: %+v", r.partition, e)
		}
	}
	// Nothing moved: MaybeWrite (even once due) and WriteNow write nothing.
	st1, _ := os.Stat(filepath.Join(logDir, HWCheckpointFile))
	if err := ck.WriteNow(); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(filepath.Join(logDir, HWCheckpointFile)); !os.SameFile(st1, st2) {
		t.Fatal("the checkpoint was rewritten with no high watermark moved")
	}

	crashed := crashCopyLogDir(t, logDir)
	ck2 := OpenHWCheckpoints(crashed, HWCheckpointOptions{})
	for p := range int32(n) {
		r := openShared(t, crashed, ck2, "t", p, id)
		if hw := r.HighWatermark(); hw != int64(p)+1 {
			t.Fatalf("t-%d reopened with hw %d, want %d", p, hw, p+1)
		}
		r.Close()
	}
}

// TestSharedHWCheckpointTopicRecreated: an entry of a deleted topic still
// in the file does not count for a topic re-created under its name (another
// id); an entry of the same topic does.
func TestSharedHWCheckpointTopicRecreated(t *testing.T) {
	logDir := t.TempDir()
	ck := OpenHWCheckpoints(logDir, HWCheckpointOptions{})
	old := leadShared(t, logDir, ck, "t", 0, [16]byte{1})
	if _, err := old.AppendLeader(build(t, batch.NoProducer(), 5)); err != nil {
		t.Fatal(err)
	}
	if err := ck.WriteNow(); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	// The new topic's partition holds 8 records, none committed; the
	// process dies before the next checkpoint write.
	if err := os.RemoveAll(old.dir); err != nil {
		t.Fatal(err)
	}
	r := leadShared(t, logDir, ck, "t", 0, [16]byte{2})
	r.SetAssignment(1, []int32{1, 2}, []int32{1, 2})
	if _, err := r.AppendLeader(build(t, batch.NoProducer(), 8)); err != nil {
		t.Fatal(err)
	}
	if hw := r.HighWatermark(); hw != 0 {
		t.Fatalf("hw %d with a follower at 0", hw)
	}
	crashed := crashCopyLogDir(t, logDir)
	r.Close()
	for _, tc := range []struct {
		id [16]byte
		hw int64
	}{{[16]byte{2}, 0}, {[16]byte{1}, 5}} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(crashed)); err != nil {
			t.Fatal(err)
		}
		c := openShared(t, dir, OpenHWCheckpoints(dir, HWCheckpointOptions{}), "t", 0, tc.id)
		if hw := c.HighWatermark(); hw != tc.hw {
			t.Fatalf("topic id %x: reopened with hw %d, want %d", tc.id[:1], hw, tc.hw)
		}
		c.Close()
	}
}

// TestSharedHWCheckpointReadsOlderFiles: a log dir written by an earlier
// version (a checkpoint in each partition directory) opens with those high
// watermarks, and the first shared write removes the older files.
func TestSharedHWCheckpointReadsOlderFiles(t *testing.T) {
	logDir := t.TempDir()
	for p := range int32(3) {
		dir := filepath.Join(logDir, fmt.Sprintf("t-%d", p))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		r, err := Open(Options{Dir: dir, Topic: "t", Partition: p, Config: config.ResolveTopic(smallIndexes, nil)})
		if err != nil {
			t.Fatal(err)
		}
		r.SetLeadership(true, 0)
		if _, err := r.AppendLeader(build(t, batch.NoProducer(), 4)); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil { // writes its private checkpoint
			t.Fatal(err)
		}
	}
	ck := OpenHWCheckpoints(logDir, HWCheckpointOptions{})
	for p := range int32(3) {
		r := openShared(t, logDir, ck, "t", p, [16]byte{9})
		defer r.Close()
		if hw := r.HighWatermark(); hw != 4 {
			t.Fatalf("t-%d opened with hw %d from its older file, want 4", p, hw)
		}
	}
	if err := ck.MaybeWrite(); err != nil {
		t.Fatal(err)
	}
	for p := range 3 {
		if _, err := os.Stat(filepath.Join(logDir, fmt.Sprintf("t-%d", p), HWCheckpointFile)); !os.IsNotExist(err) {
			t.Fatalf("t-%d: the older checkpoint is still there (%v)", p, err)
		}
	}
	if entries, err := decodeHWCheckpoint(mustRead(t, filepath.Join(logDir, HWCheckpointFile))); err != nil || len(entries) != 3 {
		t.Fatalf("shared checkpoint: %v %v", entries, err)
	}
}

// TestSharedHWCheckpointTruncation: a replica cut below what it may have
// written rewrites the shared file before it returns, while other replicas
// write concurrently; a crash after it reopens at most at the cut.
func TestSharedHWCheckpointTruncation(t *testing.T) {
	logDir := t.TempDir()
	ck := OpenHWCheckpoints(logDir, HWCheckpointOptions{})
	cut := leadShared(t, logDir, ck, "t", 0, [16]byte{1})
	defer cut.Close()
	for range 2 { // two batches: a cut inside one drops all of it
		if _, err := cut.AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
			t.Fatal(err)
		}
	}
	var others []*Replica
	for p := int32(1); p <= 4; p++ {
		r := leadShared(t, logDir, ck, "t", p, [16]byte{1})
		defer r.Close()
		others = append(others, r)
	}
	if err := ck.WriteNow(); err != nil || cut.CheckpointedHW() != 6 {
		t.Fatalf("checkpoint %d, %v", cut.CheckpointedHW(), err)
	}
	var wg sync.WaitGroup
	for _, r := range others {
		wg.Go(func() {
			for range 20 {
				if _, err := r.AppendLeader(build(t, batch.NoProducer(), 1)); err != nil {
					t.Error(err)
					return
				}
				if err := ck.WriteNow(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	cut.SetLeadership(false, 1)
	if err := cut.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	crashed := crashCopyLogDir(t, logDir)
	wg.Wait()
	if got := cut.CheckpointedHW(); got != 3 {
		t.Fatalf("checkpointed %d after cutting at 3 (hw %d, leo %d)", got, cut.HighWatermark(), cut.Log().LogEndOffset())
	}
	c := openShared(t, crashed, OpenHWCheckpoints(crashed, HWCheckpointOptions{}), "t", 0, [16]byte{1})
	defer c.Close()
	if hw := c.HighWatermark(); hw > 3 {
		t.Fatalf("reopened after the cut with hw %d, past the cut at 3", hw)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeHWCheckpoint: any bytes in the file decode to entries that
// encode and decode to the same entries, or to an error; never a panic.
func FuzzDecodeHWCheckpoint(f *testing.F) {
	f.Add([]byte("0\n1\nt 0 4\n"))
	f.Add([]byte("1\n2\na 0 4 0102030405060708090a0b0c0d0e0f10\nb 3 9 0102030405060708090a0b0c0d0e0f10\n"))
	f.Add([]byte("garbage"))
	f.Add([]byte("0\n1\nt -1 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeHWCheckpoint(b)
		if err != nil {
			return
		}
		again, err := decodeHWCheckpoint(encodeHWCheckpoint(entries))
		if err != nil || !mapsEqual(entries, again) {
			t.Fatalf("round trip of %q: %v, %v", b, again, err)
		}
	})
}

// TestSharedHWCheckpointForgetRewrites: a partition forgotten (its
// directory deleted) leaves the file at the next write. It failed when the
// last write's entries shared the map Forget deletes from: the write saw
// nothing changed and kept the stale entry.
func TestSharedHWCheckpointForgetRewrites(t *testing.T) {
	logDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(logDir, HWCheckpointFile), []byte("0\n2\nt 0 4\nt 1 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := OpenHWCheckpoints(logDir, HWCheckpointOptions{})
	ck.Forget("t", 0)
	if err := ck.WriteNow(); err != nil {
		t.Fatal(err)
	}
	entries, err := decodeHWCheckpoint(mustRead(t, filepath.Join(logDir, HWCheckpointFile)))
	if err != nil || len(entries) != 1 || entries[hwKey{"t", 1}].hw != 7 {
		t.Fatalf("after forgetting t-0: %v %v, want only t-1 at 7", entries, err)
	}
}

// TestSharedHWCheckpointIdleReadsNoReplica: once a periodic write has read
// every entry, the next ones read none until something moves; a moved high
// watermark, a registered or closed replica and a forgotten entry each make
// the next write read them all again (and write what changed).
func TestSharedHWCheckpointIdleReadsNoReplica(t *testing.T) {
	logDir := t.TempDir()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	ck := OpenHWCheckpoints(logDir, HWCheckpointOptions{Interval: time.Second, Now: clock})
	var reps []*Replica
	for p := range int32(4) {
		reps = append(reps, leadShared(t, logDir, ck, "t", p, [16]byte{1}))
	}
	defer func() {
		for _, r := range reps {
			r.Close()
		}
	}()
	if _, err := reps[0].AppendLeader(build(t, batch.NoProducer(), 3)); err != nil {
		t.Fatal(err)
	}
	tick := func() int64 {
		t.Helper()
		now = now.Add(time.Second)
		before := ck.reads.Load()
		if err := ck.MaybeWrite(); err != nil {
			t.Fatal(err)
		}
		return ck.reads.Load() - before
	}
	file := func() map[hwKey]int64 {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(logDir, HWCheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		entries, err := decodeHWCheckpoint(b)
		if err != nil {
			t.Fatal(err)
		}
		hws := map[hwKey]int64{}
		for k, e := range entries {
			hws[k] = e.hw
		}
		return hws
	}
	if n := tick(); n != 4 || !maps.Equal(file(), map[hwKey]int64{{"t", 0}: 3}) {
		t.Fatalf("first write read %d replicas, file %v", n, file())
	}
	for range 3 {
		if n := tick(); n != 0 {
			t.Fatalf("idle write read %d replicas", n)
		}
	}
	if _, err := reps[2].AppendLeader(build(t, batch.NoProducer(), 2)); err != nil {
		t.Fatal(err)
	}
	if n := tick(); n != 4 || !maps.Equal(file(), map[hwKey]int64{{"t", 0}: 3, {"t", 2}: 2}) {
		t.Fatalf("after a moved high watermark: read %d, file %v", n, file())
	}
	if n := tick(); n != 0 {
		t.Fatalf("idle again: read %d", n)
	}
	if err := reps[3].Close(); err != nil {
		t.Fatal(err)
	}
	reps = reps[:3]
	if n := tick(); n != 3 {
		t.Fatalf("after a close: read %d, want 3", n)
	}
	ck.Forget("t", 3)
	if n := tick(); n != 3 {
		t.Fatalf("after a forget: read %d, want 3", n)
	}
	reps = append(reps, leadShared(t, logDir, ck, "t", 3, [16]byte{1}))
	if n := tick(); n != 4 {
		t.Fatalf("after a register: read %d, want 4", n)
	}
}
