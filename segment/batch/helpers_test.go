package batch

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// sampleRecords returns n records with varied keys, values and headers,
// including null and empty keys and values.
func sampleRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta = int64(i * 7)
		switch i % 4 {
		case 0:
			r.Key = nil
		case 1:
			r.Key = []byte{}
		default:
			r.Key = fmt.Appendf(nil, "key-%d", i)
		}
		if i%5 == 3 {
			r.Value = nil
		} else {
			r.Value = bytes.Repeat(fmt.Appendf(nil, `{"n":%d,"msg":"hello"}`, i), 1+i%3)
		}
		if i%3 == 0 {
			r.Headers = []RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "null", Value: nil}, {Key: "", Value: []byte{}}}
		}
	}
	return recs
}

// equalRecords compares records field by field, keeping null apart from empty.
func equalRecords(t *testing.T, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := &got[i], &want[i]
		if g.OffsetDelta != w.OffsetDelta || g.TimestampDelta != w.TimestampDelta || g.Attributes != w.Attributes {
			t.Fatalf("record %d: got %+v, want %+v", i, *g, *w)
		}
		if !sameBytes(g.Key, w.Key) || !sameBytes(g.Value, w.Value) {
			t.Fatalf("record %d: key/value got %q/%q (nil %v/%v), want %q/%q (nil %v/%v)", i,
				g.Key, g.Value, g.Key == nil, g.Value == nil, w.Key, w.Value, w.Key == nil, w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range g.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !sameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				t.Fatalf("record %d header %d: got %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// mustBuild builds a batch or fails the test.
func mustBuild(t testing.TB, opts BuildOptions, recs []Record) []byte {
	t.Helper()
	b, err := Build(nil, opts, recs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func cloneBatch(b []byte) []byte { return slices.Clone(b) }
