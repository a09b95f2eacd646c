package batch

import (
	"bytes"
	"errors"
	"testing"
)

// sameAsParsed fails unless c.Header is what ParseHeader reads from c.Raw.
func sameAsParsed(t *testing.T, what string, c *Checked) {
	t.Helper()
	h, err := ParseHeader(c.Raw)
	if err != nil {
		t.Fatalf("%s: ParseHeader: %v", what, err)
	}
	if h != c.Header {
		t.Fatalf("%s: handed-down header\n%+v\nparsed from the bytes\n%+v", what, c.Header, h)
	}
}

// TestCheckedStampers pins that each stamper on a Checked leaves its header
// equal to a fresh parse of its bytes, and writes the bytes the plain
// stampers write.
func TestCheckedStampers(t *testing.T) {
	opts := BuildOptions{BaseOffset: 0, LeaderEpoch: -1, Codec: CodecLZ4, FirstTimestamp: 1000, ProducerID: 7,
		ProducerEpoch: 2, BaseSequence: 40, Transactional: true}
	src := mustBuild(t, opts, sampleRecords(9))
	cs, err := ParseAll(nil, cloneBatch(src))
	if err != nil || len(cs) != 1 {
		t.Fatalf("ParseAll: %d batches, %v", len(cs), err)
	}
	c := &cs[0]
	sameAsParsed(t, "parsed", c)
	plain := cloneBatch(src)

	c.SetBaseOffset(1234)
	SetBaseOffset(plain, 1234)
	sameAsParsed(t, "SetBaseOffset", c)
	c.SetPartitionLeaderEpoch(17)
	SetPartitionLeaderEpoch(plain, 17)
	sameAsParsed(t, "SetPartitionLeaderEpoch", c)
	c.SetLogAppendTime(99999)
	SetLogAppendTime(plain, 99999)
	sameAsParsed(t, "SetLogAppendTime", c)
	if !bytes.Equal(c.Raw, plain) {
		t.Fatal("a Checked's stampers wrote other bytes than the plain stampers")
	}
	if err := VerifyCRC(c.Raw); err != nil {
		t.Fatal(err)
	}
}

// TestCheckedRecompress pins that Checked.Recompress writes what Recompress
// writes, with the header following the new bytes, and fails as it does.
func TestCheckedRecompress(t *testing.T) {
	opts := BuildOptions{BaseOffset: 55, LeaderEpoch: 9, Codec: CodecGzip, FirstTimestamp: 123, ProducerID: 7,
		ProducerEpoch: 1, BaseSequence: 4, Transactional: true, LogAppendTime: true}
	src := mustBuild(t, opts, sampleRecords(20))
	for _, to := range allCodecs {
		want, err := Recompress(nil, src, to, 1<<20)
		if err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
		h, _ := ParseHeader(src)
		c := Checked{Header: h, Raw: src}
		if err := c.Recompress(to, 1<<20); err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
		if !bytes.Equal(c.Raw, want) {
			t.Fatalf("to %s: Checked.Recompress wrote other bytes than Recompress", to)
		}
		sameAsParsed(t, "Recompress to "+to.String(), &c)
	}

	h, _ := ParseHeader(src)
	bad := cloneBatch(src)
	bad[len(bad)-1] ^= 1
	c := Checked{Header: h, Raw: bad}
	if err := c.Recompress(CodecNone, 1<<20); !errors.Is(err, ErrCRC) || !bytes.Equal(c.Raw, bad) || c.Header != h {
		t.Fatalf("Recompress of a bad CRC: %v (batch changed: %v)", err, !bytes.Equal(c.Raw, bad) || c.Header != h)
	}
	c = Checked{Header: h, Raw: src}
	if err := c.Recompress(CodecNone, 10); !errors.Is(err, ErrTooLarge) || !bytes.Equal(c.Raw, src) {
		t.Fatalf("Recompress over the limit: %v", err)
	}
}

// TestParseAll pins that ParseAll finds the batches Split finds and stops
// where Split stops, with the same error.
func TestParseAll(t *testing.T) {
	a := mustBuild(t, BuildOptions{BaseOffset: 0, FirstTimestamp: 1, ProducerID: -1, BaseSequence: -1}, sampleRecords(3))
	b := mustBuild(t, BuildOptions{BaseOffset: 3, FirstTimestamp: 1, ProducerID: -1, BaseSequence: -1, Codec: CodecZstd}, sampleRecords(5))
	whole := append(cloneBatch(a), b...)
	for _, in := range [][]byte{whole, whole[:len(a)+10], whole[:len(whole)-1], append(cloneBatch(whole), make([]byte, HeaderSize)...)} {
		var split []Checked
		serr := Split(in, func(h *Header, raw []byte) error {
			split = append(split, Checked{Header: *h, Raw: raw})
			return nil
		})
		got, err := ParseAll(nil, in)
		if (err == nil) != (serr == nil) || err != nil && err.Error() != serr.Error() {
			t.Fatalf("%d bytes: ParseAll error %v, Split's %v", len(in), err, serr)
		}
		if len(got) != len(split) {
			t.Fatalf("%d bytes: ParseAll found %d batches, Split %d", len(in), len(got), len(split))
		}
		for i := range got {
			if got[i].Header != split[i].Header || &got[i].Raw[0] != &split[i].Raw[0] || len(got[i].Raw) != len(split[i].Raw) {
				t.Fatalf("%d bytes: batch %d differs from Split's", len(in), i)
			}
			sameAsParsed(t, "ParseAll", &got[i])
		}
	}
}
