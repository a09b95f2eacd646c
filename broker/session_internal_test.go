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

// TestNextSessionLook: a fresh registration is looked at again just past
// the moment it could first expire, and at that moment it has; an expired
// one, a stepped-down node and a nearly expired one are looked at every
// sessionPoll.
func TestNextSessionLook(t *testing.T) {
	now := time.Now()
	const session = 6 * time.Second
	renewed := now.Add(-time.Second)
	d := nextSessionLook(now, renewed, session, false)
	if d != 5*time.Second+time.Millisecond {
		t.Fatalf("renewed a second ago: next look in %v, want 5.001s", d)
	}
	if at := now.Add(d); !sessionExpired(at, renewed, session) || sessionExpired(at.Add(-2*time.Millisecond), renewed, session) {
		t.Fatalf("the look at %v is not the first moment the registration has expired", d)
	}
	for _, c := range []struct {
		name    string
		renewed time.Time
		waiting bool
	}{
		{"expired", now.Add(-7 * time.Second), true},
		{"stepped down, renewed again", now, true},
		{"expiring within the poll", now.Add(-session + 10*time.Millisecond), false},
		{"never registered", time.Time{}, true},
	} {
		if d := nextSessionLook(now, c.renewed, session, c.waiting); d != sessionPoll {
			t.Errorf("%s: next look in %v, want %v", c.name, d, sessionPoll)
		}
	}
}
