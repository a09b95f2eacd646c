package coldread

import (
	"testing"

	"github.com/shale-io/shale/controlplane"
)

// A timestamp lookup never answers an offset below the log start that
// DeleteRecords recorded: the records below it are deleted on purpose,
// even while their remote segments still exist. Failed before the lookup
// took the log start (offset 0 for a timestamp before every record).
func TestOffsetForTimestampRespectsTheRecordedLogStart(t *testing.T) {
	f := tieredFixture(t, records, smallConfig(), nil)
	rl := f.reader.segs.(*controlplane.RemoteLog)
	st := f.reader.topics.(*controlplane.Store)
	top, _ := st.Topic(f.topic)
	ps, _ := st.Partition(f.topic, 0)
	// Inside a batch of the second segment: the first segment lies wholly
	// below it, the second straddles it.
	start := f.segs[1].seg.BaseOffset + 15
	if err := rl.RaiseLogStart(testCtx(t), top.ID, 0, start, ps.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ts   int64
		want int64
	}{
		{"before every record", 0, start},
		{"of the first record", tsBase, start},
		{"of a record in a segment below the start", tsBase + 10*(f.segs[0].seg.BaseOffset+3), start},
		{"of the record just below the start", tsBase + 10*(start-1), start},
		{"of the record at the start", tsBase + 10*start, start},
		{"of a later record", tsBase + 10*(start+100), start + 100},
	} {
		off, ts, ok, err := f.reader.OffsetForTimestamp(testCtx(t), f.topic, 0, c.ts)
		if err != nil || !ok || off != c.want || ts != tsBase+10*c.want {
			t.Errorf("timestamp %s: offset %d ts %d ok %v err %v; want offset %d", c.name, off, ts, ok, err, c.want)
		}
	}
	// MAX_TIMESTAMP's remote candidate comes from retained segments only.
	last := f.segs[len(f.segs)-1].seg
	if ts, ok := f.reader.MaxTimestamp(f.topic, 0); !ok || ts != last.MaxTimestamp {
		t.Errorf("MaxTimestamp %d %v, want %d", ts, ok, last.MaxTimestamp)
	}
	// A log start above every remote record: nothing remote qualifies.
	if err := rl.RaiseLogStart(testCtx(t), top.ID, 0, last.EndOffset+1, ps.LeaderEpoch); err != nil {
		t.Fatal(err)
	}
	if off, _, ok, err := f.reader.OffsetForTimestamp(testCtx(t), f.topic, 0, 0); ok || err != nil {
		t.Errorf("log start past the remote data: offset %d ok %v err %v", off, ok, err)
	}
	if ts, ok := f.reader.MaxTimestamp(f.topic, 0); ok {
		t.Errorf("log start past the remote data: MaxTimestamp %d", ts)
	}
}
