package sasl_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testjwt"
	"github.com/shale-io/shale/internal/testlog"
	"github.com/shale-io/shale/kafka"
	"github.com/shale-io/shale/kafka/sasl"
)

// authEvents records what an AuthObserver is told.
type authEvents struct {
	mu      sync.Mutex
	events  []string // mechanism, "reauth" or "auth", "ok" or "failed"
	expired int
}

func (a *authEvents) ObserveAuthentication(listener, mechanism string, reauth bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	kind, outcome := "auth", "ok"
	if reauth {
		kind = "reauth"
	}
	if err != nil {
		outcome = "failed"
	}
	a.events = append(a.events, mechanism+" "+kind+" "+outcome)
}

func (a *authEvents) ObserveExpiredSession(string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expired++
}

func (a *authEvents) count(event string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, e := range a.events {
		if e == event {
			n++
		}
	}
	return n
}

// serveSASL serves l (with RegisterSASL and a DescribeCluster that answers
// listener|principal in ClusterID) and returns its address and log.
func serveSASL(t *testing.T, l kafka.Listener, obs kafka.AuthObserver) (string, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	reg := kafka.NewRegistry()
	kafka.RegisterSASL(reg)
	reg.Register(kmsg.DescribeCluster, 0, 1, func(_ context.Context, req *kafka.Request) (kafka.Reply, error) {
		resp := req.Msg.(*kmsg.DescribeClusterRequest).ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.ClusterID = req.Conn.Listener + "|" + req.Conn.Principal
		return kafka.Reply{Response: resp}, nil
	})
	s := kafka.NewServer(kafka.ServerConfig{AuthObserver: obs}, reg, slog.New(slog.NewTextHandler(logs, nil)))
	return serve(t, s, l), logs
}

// whoAmIAt logs in to addr with m (and opts) and asks DescribeCluster:
// the cluster id, or what the login or the request failed with.
func whoAmIAt(t *testing.T, addr string, m ksasl.Mechanism, opts ...kgo.Opt) (string, error) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	return resp.ClusterID, nil
}

// oauthServer serves OAUTHBEARER (tokens of key, issuer https://idp.example,
// audience shale) and PLAIN (alice:alice-secret, bob:bob-secret).
func oauthServer(t *testing.T, key *testjwt.Key, maxReauth time.Duration, obs kafka.AuthObserver) (string, *testlog.Buffer) {
	t.Helper()
	src, err := sasl.NewJWKSource(sasl.JWKSConfig{URL: jwksFile(t, t.TempDir(), "jwks.json", testjwt.JWKSOf(key))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := sasl.NewJWTValidator(src, sasl.ClaimRules{Issuer: "https://idp.example", Audience: []string{"shale"}, ClockSkew: 5 * time.Second}, nil)
	return serveSASL(t, kafka.Listener{Name: "SASL_PLAINTEXT", MaxReauth: maxReauth, SASL: []kafka.SASLMechanism{
		sasl.OAuthBearerMechanism(v), sasl.PlainMechanism(sasl.PlainUsers{"alice": "alice-secret", "bob": "bob-secret"}),
	}}, obs)
}

// TestFranzGoOAuthBearer logs in with franz-go's OAUTHBEARER: a good token
// is User:<sub>; each bad one is SASL_AUTHENTICATION_FAILED (after RFC
// 7628's error exchange), counted, and logged without the token.
func TestFranzGoOAuthBearer(t *testing.T) {
	key := testjwt.NewKey(t, "idp-1", "RS256")
	other := testjwt.NewKey(t, "idp-1", "RS256")
	obs := &authEvents{}
	addr, logs := oauthServer(t, key, 0, obs)
	now := time.Now()
	good := claimsAt(now, "alice")
	tok := func(k *testjwt.Key, hdr map[string]any, c map[string]any) ksasl.Mechanism {
		return oauth.Auth{Token: k.Sign(t, hdr, c)}.AsMechanism()
	}
	got, err := whoAmIAt(t, addr, tok(key, nil, good))
	if err != nil || got != "SASL_PLAINTEXT|User:alice" {
		t.Fatalf("good token: %q %v", got, err)
	}
	a := strings.Split(key.Sign(t, nil, good), ".")
	b := strings.Split(key.Sign(t, nil, with(good, "sub", "admin")), ".")
	badSig := a[0] + "." + b[1] + "." + a[2]
	bad := map[string]ksasl.Mechanism{
		"expired":        tok(key, nil, with(good, "exp", now.Add(-time.Minute).Unix())),
		"wrong issuer":   tok(key, nil, with(good, "iss", "https://evil.example")),
		"wrong audience": tok(key, nil, with(good, "aud", "kafka")),
		"wrong key":      tok(other, nil, good),
		"unknown kid":    tok(key, map[string]any{"kid": "idp-2"}, good),
		"bad signature":  oauth.Auth{Token: badSig}.AsMechanism(),
		"other authzid":  oauth.Auth{Zid: "admin", Token: key.Sign(t, nil, good)}.AsMechanism(),
	}
	for name, m := range bad {
		if _, err := whoAmIAt(t, addr, m); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	if n := obs.count("OAUTHBEARER auth failed"); n != len(bad) {
		t.Errorf("%d failed OAUTHBEARER authentications observed, want %d", n, len(bad))
	}
	if n := obs.count("OAUTHBEARER auth ok"); n != 1 {
		t.Errorf("%d successful OAUTHBEARER authentications observed, want 1", n)
	}
	l := logs.String()
	if !strings.Contains(l, "SASL authentication failed") || strings.Contains(l, a[1]) || strings.Contains(l, a[2]) {
		t.Errorf("the log has no failure line, or holds a token:\n%s", l)
	}
}

// TestOAuthBearerErrorExchange speaks RFC 7628 by hand: a bad token is
// answered with the JSON status and no error; the client's %x01 then gets
// SASL_AUTHENTICATION_FAILED, and the connection closes.
func TestOAuthBearerErrorExchange(t *testing.T) {
	key := testjwt.NewKey(t, "idp-1", "ES256")
	addr, _ := oauthServer(t, key, 0, nil)
	expired := key.Sign(t, nil, with(claimsAt(time.Now(), "alice"), "exp", time.Now().Add(-time.Hour).Unix()))
	for _, answer := range []string{"\x01", "n,,\x01auth=Bearer x\x01\x01"} {
		c := dial(t, addr)
		handshake(t, c, "OAUTHBEARER")
		resp := authenticate(t, c, "n,,\x01auth=Bearer "+expired+"\x01\x01")
		if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != `{"status":"invalid_token"}` {
			t.Fatalf("bad token: code %d, bytes %q", resp.ErrorCode, resp.SASLAuthBytes)
		}
		resp = authenticate(t, c, answer)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("answer %q: code %d", answer, resp.ErrorCode)
		}
		if c.roundTrip(apiVersions(), kmsg.NewPtrApiVersionsResponse()) {
			t.Fatalf("answer %q: the connection stayed open", answer)
		}
	}
	// A malformed initial response fails at once.
	c := dial(t, addr)
	handshake(t, c, "OAUTHBEARER")
	if resp := authenticate(t, c, "y,,\x01auth=Bearer x\x01\x01"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("channel binding flag y: code %d", resp.ErrorCode)
	}
}

func apiVersions() *kmsg.ApiVersionsRequest {
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	return av
}

func handshake(t *testing.T, c *rawConn, mech string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech
	resp := kmsg.NewPtrSASLHandshakeResponse()
	if !c.roundTrip(hs, resp) {
		t.Fatalf("SaslHandshake %s was not answered", mech)
	}
	return resp
}

func authenticate(t *testing.T, c *rawConn, msg string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, []byte(msg)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	if !c.roundTrip(req, resp) {
		t.Fatal("SaslAuthenticate was not answered")
	}
	return resp
}

func describe(c *rawConn) (string, bool) {
	req := kmsg.NewPtrDescribeClusterRequest()
	resp := kmsg.NewPtrDescribeClusterResponse()
	if !c.roundTrip(req, resp) {
		return "", false
	}
	return resp.ClusterID, true
}

// TestReauthentication (KIP-368) by hand: the session lifetime is
// connections.max.reauth.ms or the token's remaining life, whichever is
// less; a second handshake and authentication on the same connection keep
// it open; a changed principal or mechanism closes it.
func TestReauthentication(t *testing.T) {
	key := testjwt.NewKey(t, "idp-1", "ES256")
	obs := &authEvents{}
	addr, _ := oauthServer(t, key, time.Hour, obs)

	c := dial(t, addr)
	handshake(t, c, "PLAIN")
	if resp := authenticate(t, c, "\x00alice\x00alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != time.Hour.Milliseconds() {
		t.Fatalf("PLAIN: code %d, lifetime %d ms, want one hour", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	for i := range 3 {
		if resp := handshake(t, c, "PLAIN"); resp.ErrorCode != 0 {
			t.Fatalf("re-authentication %d: handshake code %d", i, resp.ErrorCode)
		}
		if resp := authenticate(t, c, "\x00alice\x00alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != time.Hour.Milliseconds() {
			t.Fatalf("re-authentication %d: code %d, lifetime %d", i, resp.ErrorCode, resp.SessionLifetimeMillis)
		}
		if who, ok := describe(c); !ok || who != "SASL_PLAINTEXT|User:alice" {
			t.Fatalf("after re-authentication %d: %q %v", i, who, ok)
		}
	}
	if n := obs.count("PLAIN reauth ok"); n != 3 {
		t.Fatalf("%d re-authentications observed, want 3", n)
	}
	// Another principal: refused, closed.
	handshake(t, c, "PLAIN")
	resp := authenticate(t, c, "\x00bob\x00bob-secret")
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "Cannot change principals") {
		t.Fatalf("changed principal: code %d, message %v", resp.ErrorCode, resp.ErrorMessage)
	}
	if _, ok := describe(c); ok {
		t.Fatal("the connection stayed open after a changed principal")
	}
	if n := obs.count("PLAIN reauth failed"); n != 1 {
		t.Fatalf("%d failed re-authentications observed, want 1", n)
	}

	// Another mechanism: ILLEGAL_SASL_STATE, closed.
	c = dial(t, addr)
	handshake(t, c, "PLAIN")
	authenticate(t, c, "\x00alice\x00alice-secret")
	if resp := handshake(t, c, "OAUTHBEARER"); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("re-authentication with another mechanism: code %d", resp.ErrorCode)
	}
	if _, ok := describe(c); ok {
		t.Fatal("the connection stayed open after a changed mechanism")
	}

	// A request between the handshake and the authentication closes.
	c = dial(t, addr)
	handshake(t, c, "PLAIN")
	authenticate(t, c, "\x00alice\x00alice-secret")
	handshake(t, c, "PLAIN")
	if _, ok := describe(c); ok {
		t.Fatal("DescribeCluster during re-authentication was answered")
	}

	// A token expiring in ten minutes: the session lasts no longer.
	c = dial(t, addr)
	handshake(t, c, "OAUTHBEARER")
	tok := key.Sign(t, nil, with(claimsAt(time.Now(), "alice"), "exp", time.Now().Add(10*time.Minute).Unix()))
	resp = authenticate(t, c, "n,,\x01auth=Bearer "+tok+"\x01\x01")
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis > (10*time.Minute).Milliseconds() || resp.SessionLifetimeMillis < (9*time.Minute).Milliseconds() {
		t.Fatalf("OAUTHBEARER: code %d, lifetime %d ms, want the token's ten minutes", resp.ErrorCode, resp.SessionLifetimeMillis)
	}

	// A client that used SaslAuthenticate v0 cannot re-authenticate.
	c = dial(t, addr)
	handshake(t, c, "PLAIN")
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 0, []byte("\x00alice\x00alice-secret")
	if r := kmsg.NewPtrSASLAuthenticateResponse(); !c.roundTrip(req, r) || r.ErrorCode != 0 {
		t.Fatal("v0 authentication failed")
	}
	if resp := handshake(t, c, "PLAIN"); resp.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("a second handshake after v0: code %d", resp.ErrorCode)
	}
}

// TestExpiredSessionCloses: past connections.max.reauth.ms without a
// re-authentication, the next request closes the connection (Kafka's
// expired-connections-killed); without the setting, sessions do not end.
func TestExpiredSessionCloses(t *testing.T) {
	key := testjwt.NewKey(t, "idp-1", "ES256")
	obs := &authEvents{}
	addr, _ := oauthServer(t, key, 300*time.Millisecond, obs)
	c := dial(t, addr)
	handshake(t, c, "PLAIN")
	start := time.Now()
	if resp := authenticate(t, c, "\x00alice\x00alice-secret"); resp.SessionLifetimeMillis != 300 {
		t.Fatalf("lifetime %d ms, want 300", resp.SessionLifetimeMillis)
	}
	deadline := time.Now().Add(testTimeout)
	for i := 0; ; i++ {
		if _, ok := describe(c); !ok {
			break
		}
		if time.Now().After(deadline) || i > 10_000_000 {
			t.Fatalf("the connection is still served past its session's end (%d requests)", i)
		}
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("closed %v after authentication, before the 300 ms lifetime", d)
	}
	obs.mu.Lock()
	expired := obs.expired
	obs.mu.Unlock()
	if expired != 1 {
		t.Fatalf("%d expired sessions observed, want 1", expired)
	}

	// franz-go re-authenticates before the session ends and keeps going.
	addr2, _ := oauthServer(t, key, 1200*time.Millisecond, obs)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr2), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := proctest.Context(t, testTimeout)
	for i := 0; obs.count("PLAIN reauth ok") < 3; i++ {
		if ctx.Err() != nil || i > 20_000 {
			t.Fatalf("%d re-authentications by franz-go before the deadline, want 3", obs.count("PLAIN reauth ok"))
		}
		resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		if err != nil || resp.ClusterID != "SASL_PLAINTEXT|User:alice" {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.expired != 1 || obs.events[len(obs.events)-1] != "PLAIN reauth ok" {
		t.Fatalf("franz-go's connection expired (%d) or failed: %v", obs.expired, obs.events)
	}
}
