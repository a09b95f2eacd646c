package coldread

import (
	"bytes"
	"testing"

	"github.com/shale-io/shale/infra/objstore/fsbucket"
	"github.com/shale-io/shale/segment/batch"
)

// TestForkRecordReadsStopAtTheCut: a second topic's records list the
// first one's objects, the last one cut inside a segment (a fork: its
// EndOffset and Size stop at a batch, ObjectEndOffset and ObjectSize keep
// the objects' bounds). Reads of the fork stop exactly at the cut, reads
// of the source still return everything, whichever reads first fills the
// shared chunk and index caches.
func TestForkRecordReadsStopAtTheCut(t *testing.T) {
	for _, forkFirst := range []bool{false, true} {
		st, rl, src := controlPlane(t, "cold")
		ctx := testCtx(t)
		dir, all := writeLog(t, records, 10, 32<<10, batch.CodecNone)
		fb, err := fsbucket.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		segs := upload(t, dir, fb, rl, src, false)
		if len(segs) < 3 {
			t.Fatalf("only %d segments", len(segs))
		}
		fork, err := st.CreateTopic(ctx, "fork", 1, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The cut: the middle batch of the second segment.
		cutSeg := segs[1]
		var starts []int64
		var bases []int64
		pos := int64(0)
		if err := batch.Split(cutSeg.data, func(h *batch.Header, _ []byte) error {
			starts, bases = append(starts, pos), append(bases, h.BaseOffset)
			pos += int64(h.Size())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		mid := len(starts) / 2
		cut, cutPos := bases[mid], starts[mid]
		for i, s := range segs[:2] {
			rec := s.seg
			rec.TopicID, rec.Revision = fork.ID, 0
			if i == 1 {
				rec.ObjectEndOffset, rec.ObjectSize = rec.EndOffset, rec.Size
				rec.EndOffset, rec.Size = cut-1, cutPos
			}
			if _, err := rl.RecreateRemoteSegment(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		want := append(append([]byte(nil), segs[0].data...), cutSeg.data[:cutPos]...)
		r, err := newReader(smallConfig(), fb, rl, st, quietLogger())
		if err != nil {
			t.Fatal(err)
		}
		check := func() {
			if got := r.LastTieredOffset("fork", 0); got != cut-1 {
				t.Fatalf("fork's last tiered offset %d, want %d", got, cut-1)
			}
			for _, maxBytes := range []int{1, 3000, 1 << 20} {
				if got := readAll(t, r, "fork", 0, maxBytes); !bytes.Equal(got, want) {
					t.Fatalf("forkFirst %v maxBytes %d: the fork reads %d bytes, want %d (the cut at %d)", forkFirst, maxBytes, len(got), len(want), cut)
				}
			}
		}
		if forkFirst {
			check()
		}
		if got := readAll(t, r, "cold", 0, 50_000); !bytes.Equal(got, all) {
			t.Fatalf("forkFirst %v: the source reads %d bytes, want %d", forkFirst, len(got), len(all))
		}
		check()
		if got := readAll(t, r, "cold", bases[mid], 3000); !bytes.Equal(got, all[len(want):]) {
			t.Fatalf("forkFirst %v: the source read from the cut differs", forkFirst)
		}
		r.Close()
	}
}
