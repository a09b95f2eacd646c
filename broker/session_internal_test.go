package broker

import (
	"testing"
	"time"
)

func TestSessionExpired(t *testing.T) {
	now := time.Now() // with its monotonic reading, as the node's
	const session = 6 * time.Second
	for _, c := range []struct {
		name    string
		renewed time.Time
		want    bool
	}{
		{"renewed a second ago", now.Add(-time.Second), false},
		{"renewal just inside the session", now.Add(-session), false},
		{"not renewed for longer than the session", now.Add(-7 * time.Second), true},
		{"never registered", time.Time{}, true},
	} {
		if got := sessionExpired(now, c.renewed, session); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
