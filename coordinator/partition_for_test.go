package coordinator

import "testing"

// Expected values are Java's "x".hashCode() and Kafka's
// Utils.abs(hash) % 50, computed independently over UTF-16 code units.
func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		key  string
		hash int32
		p50  int32
	}{
		{"", 0, 0},
		{"a", 97, 47},
		{"my-group", -1906497762, 12},
		{"polygenelubricants", -2147483648, 0}, // Integer.MIN_VALUE: Utils.abs gives 0
		{"zzzzzzzzzz", -1580979136, 36},        // negative: abs, not a mask
		{"héllo", 103094734, 34},               // a non-ASCII code unit
		{"😀", 1772899, 49},                     // a surrogate pair hashes as two code units
	} {
		if h := javaStringHashCode(tc.key); h != tc.hash {
			t.Errorf("hash(%q) = %d, want %d", tc.key, h, tc.hash)
		}
		if p := PartitionFor(tc.key, 50); p != tc.p50 {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", tc.key, p, tc.p50)
		}
	}
}
