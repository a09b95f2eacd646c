package kafka

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSASLStateCheck is the connection's authentication gate as a pure
// function of its state, the request's API and the time.
func TestSASLStateCheck(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	md, hs, au, av := int16(kmsg.Metadata), int16(kmsg.SASLHandshake), int16(kmsg.SASLAuthenticate), int16(kmsg.ApiVersions)
	for _, tc := range []struct {
		name string
		st   *saslState
		key  int16
		now  time.Time
		want error
	}{
		{"no SASL", nil, md, t0, nil},
		{"new: ApiVersions", &saslState{}, av, t0, nil},
		{"new: handshake", &saslState{}, hs, t0, nil},
		{"new: authenticate", &saslState{}, au, t0, nil},
		{"new: Metadata", &saslState{}, md, t0, ErrUnauthenticated},
		{"failed: ApiVersions", &saslState{failed: true}, av, t0, ErrUnauthenticated},
		{"authenticated, no lifetime", &saslState{authenticated: true}, md, t0.Add(1000 * time.Hour), nil},
		{"before the session's end", &saslState{authenticated: true, expiry: t0}, md, t0.Add(-time.Nanosecond), nil},
		{"at the session's end", &saslState{authenticated: true, expiry: t0}, md, t0, ErrSessionExpired},
		{"after it: ApiVersions", &saslState{authenticated: true, expiry: t0}, av, t0.Add(time.Second), ErrSessionExpired},
		{"after it: handshake re-authenticates", &saslState{authenticated: true, expiry: t0}, hs, t0.Add(time.Hour), nil},
		{"re-authenticating: authenticate", &saslState{authenticated: true, reauth: true, expiry: t0}, au, t0.Add(time.Hour), nil},
		{"re-authenticating: Metadata", &saslState{authenticated: true, reauth: true}, md, t0, ErrUnauthenticated},
		{"re-authenticating: ApiVersions", &saslState{authenticated: true, reauth: true}, av, t0, ErrUnauthenticated},
	} {
		if err := tc.st.check(tc.key, tc.now); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

type expiring struct {
	SASLExchange
	exp time.Time
}

func (e expiring) CredentialExpiry() time.Time { return e.exp }

func TestSessionLifetime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name      string
		maxReauth time.Duration
		ex        SASLExchange
		want      time.Duration
	}{
		{"off", 0, expiring{exp: now.Add(time.Minute)}, 0},
		{"the setting", time.Hour, nil, time.Hour},
		{"the token, sooner", time.Hour, expiring{exp: now.Add(time.Minute)}, time.Minute},
		{"the setting, sooner", time.Minute, expiring{exp: now.Add(time.Hour)}, time.Minute},
		{"a token past its exp (within the skew)", time.Hour, expiring{exp: now.Add(-time.Second)}, 0},
		{"an exchange without an expiry", time.Hour, expiring{}, time.Hour},
	} {
		if got := sessionLifetime(tc.maxReauth, tc.ex, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
