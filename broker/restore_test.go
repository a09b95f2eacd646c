package broker_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// TestRestoreAndForkRefuseBadRequests asks a node's restore and fork
// paths with real HTTP what they refuse before they restore anything: a
// method other than POST (405), a body that does not decode or misses
// what it must name (400, saying why), and a fork of a topic the cluster
// does not have (409, from the restorer).
func TestRestoreAndForkRefuseBadRequests(t *testing.T) {
	n := testnode.Start(t, t.TempDir())
	ctx := proctest.Context(t, 60*time.Second)
	base := "http://" + n.AdminAddr()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		method, path, body string
		code               int
		says               string
	}{
		{http.MethodGet, adminapi.RestorePath, "", http.StatusMethodNotAllowed, "POST only"},
		{http.MethodGet, adminapi.ForkPath, "", http.StatusMethodNotAllowed, "POST only"},
		{http.MethodPost, adminapi.RestorePath, "{", http.StatusBadRequest, "bad restore request: "},
		{http.MethodPost, adminapi.ForkPath, "{", http.StatusBadRequest, "bad fork request: "},
		{http.MethodPost, adminapi.RestorePath, "{}", http.StatusBadRequest, "name topics or ask for all"},
		{http.MethodPost, adminapi.ForkPath, `{"source": "orders"}`, http.StatusBadRequest, "name the source topic and the new one"},
		{http.MethodPost, adminapi.ForkPath, `{"source": "nope", "name": "copy"}`, http.StatusConflict, `no topic "nope"`},
	} {
		if code, body := do(tc.method, tc.path, tc.body); code != tc.code || !strings.Contains(body, tc.says) {
			t.Fatalf("%s %s %s: %d %q; want %d saying %q", tc.method, tc.path, tc.body, code, body, tc.code, tc.says)
		}
	}
}
