package coordinator

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
)

// TestRecordReader reads a version 0 value with arrays and tagged fields,
// and fails (sticky, without allocating) on a wrong version, a null or
// overlong array, an array over MaxArray and a tagged field past the end.
func TestRecordReader(t *testing.T) {
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendCompactArrayLen(v, 2)
	v = kbin.AppendInt32(v, 7)
	v = kbin.AppendInt32(v, 9)
	v = kbin.AppendCompactArrayLen(v, 1)
	v = kbin.AppendCompactString(v, "a")
	v = kbin.AppendUvarint(v, 1) // one tagged field
	v = kbin.AppendUvarint(v, 0)
	v = kbin.AppendUvarint(v, 2)
	v = append(v, 0xee, 0xee)
	r := NewRecordReader(v)
	if got := r.Int32s(); !slices.Equal(got, []int32{7, 9}) {
		t.Fatalf("Int32s: %v", got)
	}
	if got := r.Strings(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("Strings: %v", got)
	}
	if err := r.Done(); err != nil {
		t.Fatalf("Done: %v", err)
	}

	fails := map[string]func() *RecordReader{
		"version 1": func() *RecordReader { return NewRecordReader(kbin.AppendInt16(v[:0:0], 1)) },
		"null array": func() *RecordReader {
			r := NewRecordReader(append(kbin.AppendInt16(nil, 0), 0))
			r.ArrayLen()
			return r
		},
		"array longer than the value": func() *RecordReader {
			r := NewRecordReader(kbin.AppendCompactArrayLen(kbin.AppendInt16(nil, 0), 1000))
			r.Int32s()
			return r
		},
		"array over MaxArray": func() *RecordReader {
			r := NewRecordReader(v)
			r.MaxArray = 1
			r.Int32s()
			return r
		},
		"tagged field longer than the value": func() *RecordReader {
			r := NewRecordReader(kbin.AppendUvarint(kbin.AppendUvarint(kbin.AppendUvarint(kbin.AppendInt16(nil, 0), 1), 0), 50))
			return r
		},
	}
	for name, f := range fails {
		if err := f().Done(); err == nil {
			t.Errorf("%s: Done gave no error", name)
		}
	}
}
