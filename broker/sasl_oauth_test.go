package broker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testjwt"
	"github.com/shale-io/shale/internal/testnode"
)

func tokenClaims(sub string, life time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{"sub": sub, "iss": "https://idp.example", "aud": []string{"shale"},
		"iat": now.Add(-time.Second).Unix(), "exp": now.Add(life).Unix()}
}

// TestOAuthBearerListener runs a node with a SASL_PLAINTEXT listener
// offering OAUTHBEARER against a JWKS file and connections.max.reauth.ms of
// 1.5 s: franz-go produces with fresh tokens across several
// re-authentications on the same connections and consumes everything back;
// bad tokens each get SASL_AUTHENTICATION_FAILED and are counted; a raw
// connection that does not re-authenticate is closed after its session.
func TestOAuthBearerListener(t *testing.T) {
	key := testjwt.NewKey(t, "idp-1", "RS256")
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, testjwt.JWKSOf(key), 0o600); err != nil {
		t.Fatal(err)
	}
	n := testnode.Start(t, t.TempDir(), func(c *config.Broker) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.SASLEnabledMechanisms = "OAUTHBEARER"
		c.SASLOAuthBearerJWKSEndpointURL = "file://" + jwks
		c.SASLOAuthBearerExpectedIssuer = "https://idp.example"
		c.SASLOAuthBearerExpectedAudience = "kafka, shale"
		c.ConnectionsMaxReauth = 1500 * time.Millisecond
	})
	addr := n.ListenerAddr("SASL_PLAINTEXT")
	ctx := proctest.Context(t, 90*time.Second)

	var tokens atomic.Int32
	mech := oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		tokens.Add(1)
		return oauth.Auth{Token: key.Sign(t, nil, tokenClaims("app", time.Hour))}, nil
	})
	const topic = "oauth"
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.DefaultProduceTopic(topic),
		kgo.ConsumeTopics(topic), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("CreateTopic over OAUTHBEARER: %v", err)
	}
	reauths := func() float64 {
		v, _ := testnode.MetricValue(testnode.Scrape(t, n), "kafka_server_socketservermetrics_successful_reauthentication_total",
			"listener", "SASL_PLAINTEXT", "mechanism", "OAUTHBEARER")
		return v
	}
	produced := 0
	for reauths() < 3 {
		if ctx.Err() != nil || produced >= 2000 {
			t.Fatalf("%v re-authentications after %d records, want 3", reauths(), produced)
		}
		for range 10 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", produced)}).FirstErr(); err != nil {
				t.Fatalf("record %d: %v", produced, err)
			}
			produced++
		}
	}
	got := 0
	for got < produced && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil && ctx.Err() == nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprintf("r%d", got) {
				t.Fatalf("record %d is %q", got, r.Value)
			}
			got++
		})
	}
	if got != produced {
		t.Fatalf("consumed %d of %d", got, produced)
	}
	fams := testnode.Scrape(t, n)
	if v, _ := testnode.MetricValue(fams, "kafka_server_socketservermetrics_expired_connections_killed_total"); v != 0 {
		t.Fatalf("%v connections of a re-authenticating client were killed", v)
	}
	if tokens.Load() < 4 {
		t.Fatalf("franz-go asked for %d tokens, want one per (re-)authentication", tokens.Load())
	}

	other := testjwt.NewKey(t, "idp-1", "RS256")
	good := tokenClaims("app", time.Hour)
	with := func(k string, v any) map[string]any {
		c := tokenClaims("app", time.Hour)
		c[k] = v
		return c
	}
	forged := key.Sign(t, nil, good)
	forged = forged[:len(forged)-4] + "AAAA"
	bad := map[string]string{
		"expired":        key.Sign(t, nil, tokenClaims("app", -time.Hour)),
		"wrong issuer":   key.Sign(t, nil, with("iss", "https://evil.example")),
		"wrong audience": key.Sign(t, nil, with("aud", "billing")),
		"wrong key":      other.Sign(t, nil, good),
		"unknown kid":    key.Sign(t, map[string]any{"kid": "idp-9"}, good),
		"bad signature":  forged,
	}
	for name, tok := range bad {
		err := oauthLogin(ctx, t, addr, oauth.Auth{Token: tok}.AsMechanism())
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}
	if v := testnode.MustMetric(t, testnode.Scrape(t, n), "kafka_server_socketservermetrics_failed_authentication_total",
		"listener", "SASL_PLAINTEXT", "mechanism", "OAUTHBEARER"); v != float64(len(bad)) {
		t.Errorf("failed_authentication_total %v, want %d", v, len(bad))
	}

	// A connection that authenticates once and never again: closed at the
	// first request the node reads 1.5 s or more after the login.
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(60 * time.Second))
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	send := func(req kmsg.Request, resp kmsg.Response) error {
		if _, err := nc.Write(f.AppendRequest(nil, req, 1)); err != nil {
			return err
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return err
		}
		body := make([]byte, int(size[0])<<24|int(size[1])<<16|int(size[2])<<8|int(size[3]))
		if _, err := io.ReadFull(nc, body); err != nil {
			return err
		}
		resp.SetVersion(req.GetVersion())
		skip := 4
		if resp.IsFlexible() {
			skip++
		}
		return resp.ReadFrom(body[skip:])
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "OAUTHBEARER"
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.Version = 2
	au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + key.Sign(t, nil, good) + "\x01\x01")
	aresp := kmsg.NewPtrSASLAuthenticateResponse()
	if err := send(hs, kmsg.NewPtrSASLHandshakeResponse()); err != nil {
		t.Fatalf("raw login: handshake: %v", err)
	}
	// The session starts when the node answers the login, which is after
	// the login is sent: its end is at least 1.5 s after this.
	authenticated := time.Now()
	if err := send(au, aresp); err != nil || aresp.ErrorCode != 0 || aresp.SessionLifetimeMillis != 1500 {
		t.Fatalf("raw login: %v, code %d, lifetime %d", err, aresp.ErrorCode, aresp.SessionLifetimeMillis)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	for i := 0; ; i++ {
		if i > 10_000_000 || time.Since(authenticated) > 30*time.Second {
			t.Fatal("the connection is still served 30 s past its session's end")
		}
		if err = send(md, kmsg.NewPtrMetadataResponse()); err != nil {
			break
		}
	}
	// Every Metadata was answered until the node closed the connection
	// (not an answer the loop could not read, nor a reset).
	if !errors.Is(err, io.EOF) {
		t.Fatalf("Metadata in the session: %v, want answers until the node closes the connection", err)
	}
	// The node judges a request by when it read it, after the client sent
	// it and before the client sees the close: a close seen sooner than
	// 1.5 s after the login was sent ended the session early.
	if d := time.Since(authenticated); d < 1500*time.Millisecond {
		t.Fatalf("closed %v after the login, before its 1.5 s session ended", d)
	}
	// Counted before the connection closed.
	if v := testnode.MustMetric(t, testnode.Scrape(t, n), "kafka_server_socketservermetrics_expired_connections_killed_total", "listener", "SASL_PLAINTEXT"); v != 1 {
		t.Fatalf("expired_connections_killed_total %v, want 1", v)
	}
}

func oauthLogin(ctx context.Context, t *testing.T, addr string, m sasl.Mechanism) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err
}
