package segment

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shale-io/shale/segment/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchSpec describes a test batch. Record i has timestamp firstTs +
// tsDeltas[i] (or firstTs + i when tsDeltas is nil).
type batchSpec struct {
	records   int
	firstTs   int64
	tsDeltas  []int64
	valueSize int
	pid       int64
	pepoch    int16
	seq       int32
	gzip      bool
	appendTs  bool // LogAppendTime attribute
}

// testTs0 is the fake clock's start; batchSpec timestamps are relative to it.
const testTs0 = 1_700_000_000_000

// buildBatch encodes a RecordBatch v2 with franz-go's kmsg, as a client would.
func buildBatch(t testing.TB, sp batchSpec) []byte {
	t.Helper()
	if sp.records == 0 {
		sp.records = 1
	}
	var recs []byte
	maxTs := int64(-1)
	sp.firstTs += testTs0
	for i := 0; i < sp.records; i++ {
		d := int64(i)
		if sp.tsDeltas != nil {
			d = sp.tsDeltas[i]
		}
		maxTs = max(maxTs, sp.firstTs+d)
		val := bytes.Repeat([]byte{byte('a' + i%26)}, sp.valueSize)
		r := kmsg.Record{TimestampDelta64: d, OffsetDelta: int32(i), Key: []byte{byte(i)}, Value: val}
		body := r.AppendTo(nil)[1:] // Length 0 encodes in one byte
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	attrs := int16(0)
	if sp.gzip {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(recs)
		w.Close()
		recs = buf.Bytes()
		attrs |= 1
	}
	if sp.appendTs {
		attrs |= 0x08
	}
	pid := sp.pid
	if pid == 0 {
		pid = -1
	}
	seq := sp.seq
	if pid < 0 {
		seq = -1
	}
	rb := kmsg.RecordBatch{
		Magic: 2, Attributes: attrs, LastOffsetDelta: int32(sp.records - 1),
		FirstTimestamp: sp.firstTs, MaxTimestamp: maxTs, ProducerID: pid, ProducerEpoch: sp.pepoch,
		FirstSequence: seq, NumRecords: int32(sp.records), Records: recs,
	}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(recs))
	b := rb.AppendTo(nil)
	rb.CRC = int32(crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return rb.AppendTo(nil)
}

// fakeClock is an injected clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(testTs0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testConfig is Defaults with a fake clock, a silent logger and small
// indexes.
func testConfig(clock *fakeClock) Config {
	cfg := Defaults()
	cfg.Now = clock.Now
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.SegmentIndexBytes = 4096
	return cfg
}

func openLog(t testing.TB, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(dir, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte, epoch int32) AppendInfo {
	t.Helper()
	info, err := l.Append(b, epoch)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return info
}

// decodeBatches parses b with kmsg.RecordBatch, checking each CRC.
func decodeBatches(t testing.TB, b []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("kmsg decode: %v", err)
		}
		n := int(rb.Length) + batch.LogOverhead
		if got := int32(crc32.Checksum(b[21:n], crc32.MakeTable(crc32.Castagnoli))); got != rb.CRC {
			t.Fatalf("batch at offset %d: crc %08x, computed %08x", rb.FirstOffset, rb.CRC, got)
		}
		out = append(out, rb)
		b = b[n:]
	}
	return out
}

// readAll reads every batch from offset to the LEO, looping over segments.
func readAll(t testing.TB, l *Log, from int64) []byte {
	t.Helper()
	var out []byte
	for from < l.LogEndOffset() {
		res, err := l.Read(from, 1<<30, math.MaxInt64, true)
		if err != nil {
			t.Fatalf("read %d: %v", from, err)
		}
		if res.Size == 0 {
			t.Fatalf("read %d: no data before LEO %d", from, l.LogEndOffset())
		}
		b := make([]byte, res.Size)
		if _, err := res.File.ReadAt(b, res.Position); err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
		from = res.NextOffset
	}
	return out
}

// fixCRC recomputes a batch's CRC after a test edits it.
func fixCRC(b []byte) {
	c := batch.ComputeCRC(b)
	b[17], b[18], b[19], b[20] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
}

// closeForCrashTest releases the files without the clean-shutdown marker,
// as if the process died (tests only).
func (l *Log) closeForCrashTest() {
	l.writer.Lock()
	defer l.writer.Unlock()
	l.stopFlusher()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.closed = true
	for _, s := range l.mu.segments {
		s.close(false)
	}
}

var errNoData = errorString("read returned no data below the LEO")

type errorString string

func (e errorString) Error() string { return string(e) }

// startChild runs this test binary again, with only the test named child
// and the environment variable env set to dir, and returns the process and
// the lines of its standard output (closed when the output ends). End it
// with killChild.
func startChild(t *testing.T, child, env, dir string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines
}

// killChild kills a startChild process with SIGKILL, reads what is left of
// its output and waits for it.
func killChild(cmd *exec.Cmd, lines <-chan string) {
	cmd.Process.Signal(syscall.SIGKILL)
	for range lines {
	}
	cmd.Wait()
}
