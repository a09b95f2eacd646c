package broker

import (
	"testing"
	"time"
)

func TestSessionLost(t *testing.T) {
	now := time.Unix(1000, 0)
	const session = 6 * time.Second
	for _, c := range []struct {
		name      string
		downSince time.Time
		renewed   time.Time
		want      bool
	}{
		{"connected, renewed a second ago", time.Time{}, now.Add(-time.Second), false},
		{"disconnected for less than the session", now.Add(-5 * time.Second), now.Add(-5 * time.Second), false},
		{"disconnected for longer than the session", now.Add(-7 * time.Second), now.Add(-2 * time.Second), true},
		{"connected, but the registration not renewed for longer than the session", time.Time{}, now.Add(-7 * time.Second), true},
		{"connected, renewal just inside the session", time.Time{}, now.Add(-session), false},
		{"never registered", time.Time{}, time.Time{}, true},
	} {
		if got := sessionLost(now, c.downSince, c.renewed, session); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
