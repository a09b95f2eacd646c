package controlplane

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopicName(t *testing.T) {
	good := []string{"a", "orders", "a.b", ".a", "a..b", "A-Z_0.9", "__consumer_offsets", "...", strings.Repeat("x", 249)}
	for _, n := range good {
		if err := ValidateTopicName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	bad := []string{"", ".", "..", "a b", "a/b", "é", "a*", "a>", strings.Repeat("x", 250)}
	for _, n := range bad {
		if err := ValidateTopicName(n); !errors.Is(err, ErrInvalidTopicName) {
			t.Errorf("%q: err = %v, want ErrInvalidTopicName", n, err)
		}
	}
}

func TestTopicKeyRoundTrip(t *testing.T) {
	for _, n := range []string{"a", ".a", "a.", "a..b", "x.y.z", "a_b-c"} {
		k := topicKey(n)
		if strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") || strings.Contains(k, "..") {
			t.Errorf("%q: key %q has an empty token", n, k)
		}
		if got := topicFromKey(k); got != n {
			t.Errorf("%q: round trip gave %q", n, got)
		}
	}
}

func TestTopicID(t *testing.T) {
	seen := map[TopicID]bool{}
	for range 200 {
		id := NewTopicID()
		if id.IsZero() || seen[id] {
			t.Fatalf("bad or repeated id %v", id)
		}
		seen[id] = true
		if id[6]>>4 != 4 || id[8]>>6 != 2 {
			t.Fatalf("%x is not a version 4 UUID", id[:])
		}
		s := id.String()
		if len(s) != 22 || strings.HasPrefix(s, "-") || strings.ContainsAny(s, "+/=") {
			t.Fatalf("String() = %q", s)
		}
		for _, form := range []string{s, id.Hex()} {
			back, err := ParseTopicID(form)
			if err != nil || back != id {
				t.Fatalf("ParseTopicID(%q) = %v, %v", form, back, err)
			}
		}
	}
	// Kafka prints the UUID 00000000-0000-0000-0000-000000000001 as AAAAAAAAAAAAAAAAAAAAAQ.
	if got := (TopicID{15: 1}).String(); got != "AAAAAAAAAAAAAAAAAAAAAQ" {
		t.Fatalf("String() = %q", got)
	}
	if _, err := ParseTopicID("short"); err == nil {
		t.Fatal("ParseTopicID accepted a short string")
	}
}

func TestPartitionKeyRoundTrip(t *testing.T) {
	id := NewTopicID()
	gotID, p, err := parsePartitionKey(partitionKey(id, 17))
	if err != nil || gotID != id || p != 17 {
		t.Fatalf("got %v %d %v", gotID, p, err)
	}
	if _, _, err := parsePartitionKey("nothex.1"); err == nil {
		t.Fatal("accepted a bad key")
	}
}
