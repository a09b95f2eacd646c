package batch

import (
	"bytes"
	"errors"
	"testing"
)

// TestEndTxnMarkerLayout: the marker batch is Kafka's, byte for byte in
// its control record (ControlRecordType key v0, EndTransactionMarker v0).
func TestEndTxnMarkerLayout(t *testing.T) {
	for _, commit := range []bool{false, true} {
		b, err := BuildEndTxnMarker(nil, 42, 7, 1700000000000, EndTxnMarker{Commit: commit, CoordinatorEpoch: 0x01020304})
		if err != nil {
			t.Fatal(err)
		}
		h, err := Validate(b, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if h.Attributes != attrControl|attrTransactional || h.ProducerID != 42 || h.ProducerEpoch != 7 || h.BaseSequence != -1 ||
			h.NumRecords != 1 || h.FirstTimestamp != 1700000000000 || h.MaxTimestamp != 1700000000000 {
			t.Fatalf("header %+v", h)
		}
		recs, err := Records(b, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		typ := byte(0)
		if commit {
			typ = 1
		}
		if !bytes.Equal(recs[0].Key, []byte{0, 0, 0, typ}) || !bytes.Equal(recs[0].Value, []byte{0, 0, 1, 2, 3, 4}) {
			t.Fatalf("control record key %x value %x", recs[0].Key, recs[0].Value)
		}
		m, ok, err := ParseEndTxnMarker(b)
		if err != nil || !ok || m.Commit != commit || m.CoordinatorEpoch != 0x01020304 {
			t.Fatalf("ParseEndTxnMarker: %+v %v %v", m, ok, err)
		}
	}
	data, err := Build(nil, NoProducer(), []Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseEndTxnMarker(data); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a data batch as a marker: %v", err)
	}
	// Another control type (KIP-848's, say) is no marker, and no error.
	other, err := Build(nil, BuildOptions{ProducerID: 1, BaseSequence: -1, Control: true, Transactional: true},
		[]Record{{Key: ControlKey(5), Value: []byte{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ParseEndTxnMarker(other); ok || err != nil {
		t.Fatalf("control type 5: %v %v", ok, err)
	}
}

// FuzzControlRecord: the control record decoders, on keys and values from
// any batch a follower or a recovery reads, never panic, fail only with
// ErrInvalidRecord, and what they accept encodes back to its prefix.
func FuzzControlRecord(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 5})
	f.Add([]byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 1, 0, 0, 9}, []byte{0, 1, 0, 0})
	f.Add([]byte{}, []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		typ, err := ParseControlKey(key)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("key: untyped error %v", err)
			}
		} else if key[0] == 0 && key[1] == 0 && !bytes.Equal(ControlKey(typ), key[:4]) {
			t.Fatalf("key %x decoded to %d, encodes to %x", key, typ, ControlKey(typ))
		}
		ce, err := ParseEndTxnValue(value)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("value: untyped error %v", err)
			}
		} else if value[0] == 0 && value[1] == 0 && !bytes.Equal((EndTxnMarker{CoordinatorEpoch: ce}).Value(), value[:6]) {
			t.Fatalf("value %x decoded to %d", value, ce)
		}
		// The same record inside a control batch.
		b, err := Build(nil, BuildOptions{ProducerID: 1, BaseSequence: -1, Control: true, Transactional: true},
			[]Record{{Key: key, Value: value}})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := ParseEndTxnMarker(b); err != nil && !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("marker: untyped error %v", err)
		}
	})
}
