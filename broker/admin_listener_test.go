package broker_test

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testcerts"
	"github.com/shale-io/shale/internal/testlog"
	"github.com/shale-io/shale/internal/testnode"
	"github.com/shale-io/shale/sdk"
)

// TestAdminListenerTLSAndAuth runs a node whose admin listener serves
// HTTPS with bearer tokens from a file and client certificates
// (admin_ssl_client_auth=requested), the health endpoints open, pprof off,
// and asks it with real HTTP clients: no credentials is 401, a wrong token
// 403, both with no detail and a log line without the token; a token or a
// client certificate is served; plain HTTP and a certificate of another CA
// are refused at the handshake; a rotated tokens file applies without a
// restart; the SDK passes a token and a CA.
func TestAdminListenerTLSAndAuth(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "admin-ca")
	cert, key := ca.Server(t, "node")
	const tokA, tokB = "ops-token-0123456789abcdef", "ops-token-rotated-0123456789"
	tokens := filepath.Join(dir, "tokens")
	writeRenamed(t, tokens, "# ops\n"+tokA+"\n")
	logs := &testlog.Buffer{}
	cfg := testnode.Config(filepath.Join(dir, "node"), func(c *config.Broker) {
		c.AdminSSLCertificateLocation = testcerts.Write(t, dir, "admin.crt", cert)
		c.AdminSSLKeyLocation = testcerts.Write(t, dir, "admin.key", key)
		c.AdminSSLCALocation = testcerts.Write(t, dir, "ca.pem", ca.CertPEM)
		c.AdminSSLClientAuth = "requested"
		c.AdminAuthTokensFile = tokens
		c.AdminHealthUnauthenticated = true
	})
	ctx := proctest.Context(t, 60*time.Second)
	n := testnode.StartConfig(t, ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	base := "https://" + n.AdminAddr()

	httpsClient := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: certs}}}
	}
	get := func(hc *http.Client, path, token string) (int, string, http.Header, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header, nil
	}
	plain := httpsClient()
	for _, tc := range []struct {
		path, token string
		code        int
	}{
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
		{broker.MetricsPath, "", http.StatusUnauthorized},
		{broker.ReplicationStatusPath, "", http.StatusUnauthorized},
		{broker.MetricsPath, "not-the-token-0123456789", http.StatusForbidden},
		{broker.MetricsPath, tokA, http.StatusOK},
		{broker.ReplicationStatusPath, tokA, http.StatusOK},
		{"/debug/pprof/", tokA, http.StatusNotFound},
	} {
		code, body, hdr, err := get(plain, tc.path, tc.token)
		if err != nil || code != tc.code {
			t.Fatalf("GET %s (token %v): %d %v, want %d", tc.path, tc.token != "", code, err, tc.code)
		}
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			if strings.TrimSpace(body) != http.StatusText(code) {
				t.Fatalf("GET %s: body %q, want only %q", tc.path, body, http.StatusText(code))
			}
			if (code == http.StatusUnauthorized) != strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("GET %s: %d with WWW-Authenticate %q", tc.path, code, hdr.Get("WWW-Authenticate"))
			}
		}
	}
	if !strings.Contains(logs.String(), `msg="admin: request refused"`) || strings.Contains(logs.String(), "not-the-token") {
		t.Fatalf("want refusal lines without the token:\n%s", grepLines(logs.String(), "admin"))
	}

	// A client certificate the CA signed authenticates without a token.
	if code, _, _, err := get(httpsClient(ca.ClientTLS(t, "ops", "")), broker.ReplicationStatusPath, ""); err != nil || code != http.StatusOK {
		t.Fatalf("mTLS: %d %v", code, err)
	}
	// One from another CA authenticates nothing (Go's client does not even
	// send it: the server names its CA as the one it accepts); plain HTTP
	// fails the handshake.
	other := testcerts.NewCA(t, "other-ca")
	if code, _, _, err := get(httpsClient(other.ClientTLS(t, "ops", "")), broker.ReplicationStatusPath, ""); err == nil &&
		code != http.StatusUnauthorized {
		t.Fatalf("a certificate of another CA got %d", code)
	}
	if resp, err := http.Get("http://" + n.AdminAddr() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP served on the HTTPS admin listener")
		}
	}

	// Rotation: B replaces A without a restart.
	writeRenamed(t, tokens, tokB+"\n")
	if err := proctest.WaitFor(10*time.Second, func() bool {
		a, _, _, _ := get(plain, broker.MetricsPath, tokA)
		b, _, _, _ := get(plain, broker.MetricsPath, tokB)
		return a == http.StatusForbidden && b == http.StatusOK
	}); err != nil {
		t.Fatal("the rotated tokens file was not applied: ", err)
	}

	// The SDK and adminapi pass a token and trust the CA.
	tc, err := adminapi.TLSConfig(filepath.Join(dir, "ca.pem"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	if _, err := (adminapi.Client{HTTP: hc, Token: tokB}).ReplicationStatus(ctx, base, ""); err != nil {
		t.Fatal("adminapi with a token: ", err)
	}
	if _, err := (adminapi.Client{HTTP: hc}).ReplicationStatus(ctx, base, ""); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("adminapi without a token: %v, want a 401", err)
	}
	adm, err := sdk.NewAdmin(sdk.WithSeeds(n.KafkaAddr()), sdk.WithAdminURL(base), sdk.WithHTTPClient(hc), sdk.WithAdminToken(tokB))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.TierStatus(ctx, ""); err != nil {
		t.Fatal("sdk TierStatus with a token: ", err)
	}
}

// TestAdminPprofOnlyWhenEnabled: pprof is off by default and served with
// admin_pprof_enable.
func TestAdminPprofOnlyWhenEnabled(t *testing.T) {
	for _, on := range []bool{false, true} {
		n := testnode.Start(t, t.TempDir(), func(c *config.Broker) { c.AdminPprofEnable = on })
		resp, err := http.Get("http://" + n.AdminAddr() + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
			t.Fatalf("admin_pprof_enable=%v: /debug/pprof/ %d, want %d", on, resp.StatusCode, want)
		}
	}
}

// writeRenamed replaces path with data by renaming a complete file over it.
func writeRenamed(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
