package testnode

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestShareAck pins the share group tests' convention: "rel-" records are
// released, "rej-" ones rejected, the rest accepted.
func TestShareAck(t *testing.T) {
	for v, want := range map[string]kgo.AckStatus{
		"rel-1": kgo.AckRelease,
		"rej-1": kgo.AckReject,
		"acc-1": kgo.AckAccept,
		"":      kgo.AckAccept,
		"xrel-": kgo.AckAccept,
	} {
		if got := ShareAck(v); got != want {
			t.Errorf("ShareAck(%q) = %v, want %v", v, got, want)
		}
	}
}
