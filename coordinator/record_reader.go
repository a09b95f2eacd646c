package coordinator

import "github.com/twmb/franz-go/pkg/kbin"

// RecordReader reads the flexible versions (compact arrays and strings,
// tagged fields) of the coordinators' record values from their internal
// topics, with the checks bytes read back from disk need: an array length
// that is null or longer than what is left fails the reader rather than
// allocating. Like kbin.Reader it fails sticky: after a failure every read
// returns zero values and Ok is false.
type RecordReader struct {
	kbin.Reader
	// MaxArray, if positive, is the longest array ArrayLen accepts.
	MaxArray int
}

// NewRecordReader reads b, after its int16 version, which must be 0 (the
// reader fails otherwise).
func NewRecordReader(b []byte) *RecordReader {
	r := &RecordReader{Reader: kbin.Reader{Src: b}}
	if v := r.Int16(); v != 0 {
		r.Fail()
	}
	return r
}

// Fail makes the reader fail.
func (r *RecordReader) Fail() { r.Src = nil; r.Span(1) }

// ArrayLen reads a compact array length, refusing null, one that cannot
// fit in what is left (each element takes at least one byte) and one over
// MaxArray.
func (r *RecordReader) ArrayLen() int {
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) || r.MaxArray > 0 && int(n) > r.MaxArray {
		r.Fail()
		return 0
	}
	return int(n)
}

// SkipTags skips a tagged-field section.
func (r *RecordReader) SkipTags() {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// Int32s reads a compact array of int32.
func (r *RecordReader) Int32s() []int32 { return readArray(r, r.Int32) }

// Strings reads a compact array of compact strings.
func (r *RecordReader) Strings() []string { return readArray(r, r.CompactString) }

func readArray[T any](r *RecordReader, read func() T) []T {
	n := r.ArrayLen()
	out := make([]T, 0, n)
	for range n {
		out = append(out, read())
	}
	return out
}

// Done skips the value's closing tagged fields and reports whether any
// read failed (kbin.Reader.Complete: bytes left over are not an error).
func (r *RecordReader) Done() error {
	r.SkipTags()
	return r.Complete()
}
