package partition

import (
	"testing"

	"github.com/shale-io/shale/infra/config"
)

// TestWritebackBytesReachesTheLog checks that Options.WritebackBytes (the
// broker's log_writeback_bytes) is the log's setting, and stays so when
// the topic's configs are altered.
func TestWritebackBytesReachesTheLog(t *testing.T) {
	for _, want := range []int64{0, 12345} {
		r, err := Open(Options{Dir: t.TempDir(), Topic: "t", Partition: 0, Config: config.ResolveTopic(nil, nil), WritebackBytes: want})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Log().Config().WritebackBytes; got != want {
			t.Fatalf("after Open: log writeback %d, want %d", got, want)
		}
		r.SetConfig(config.ResolveTopic(map[string]string{"segment.bytes": "1048576"}, nil))
		if got := r.Log().Config().WritebackBytes; got != want {
			t.Fatalf("after SetConfig: log writeback %d, want %d", got, want)
		}
		if got := r.Log().Config().SegmentBytes; got != 1<<20 {
			t.Fatalf("after SetConfig: segment.bytes %d: the new config was not applied", got)
		}
		r.Close()
	}
}
