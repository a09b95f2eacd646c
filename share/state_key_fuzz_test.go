package share

import (
	"encoding/base64"
	"strconv"
	"testing"
)

// FuzzParseStateKey: a share coordinator key from the network (FindCoordinator
// v6 key type 2) either fails to parse or parses to a key that prints back to
// the same text and maps to a partition in range.
func FuzzParseStateKey(f *testing.F) {
	f.Add("sg:" + base64.RawURLEncoding.EncodeToString(make([]byte, 16)) + ":3")
	f.Add("no-colons")
	f.Add("a:b:c:d")
	f.Add("g:AAAAAAAAAAAAAAAAAAAAAA:-1")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseStateKey(s)
		if err != nil {
			return
		}
		back := k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
		again, err := ParseStateKey(back)
		if err != nil || again != k {
			t.Fatalf("%q parsed to %+v, which prints as %q and parses to %+v (%v)", s, k, back, again, err)
		}
		if p := StatePartitionFor(k, DefaultStatePartitions); p < 0 || p >= DefaultStatePartitions {
			t.Fatalf("%q: partition %d", s, p)
		}
	})
}
