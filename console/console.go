// Package console is Shale's web console: a single-page app (plain HTML,
// CSS and JavaScript, no build step) embedded in the binary and served by
// every node's admin listener under Prefix. The pages read the admin API's
// JSON (adminapi.Console*Path, ConsumerLagPath, HealthPath, BalancePath)
// from the node that served them, and, for a caller whose role is admin
// (adminapi.ConsoleSessionPath), offer the safe actions: same-origin POSTs
// of adminapi.ConsoleElectPreferredPath, ConsoleRebalancePath and
// ConsoleResetOffsetsPath. The listener's authentication stands in
// front of the pages as of every other path: with admin_auth_tokens_file
// the browser asks for a token (the password of HTTP Basic, any user
// name) and sends it with each request; with admin_ssl_client_auth it
// presents the operator's client certificate.
//
// The package imports only the standard library; broker mounts Handler.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

// Prefix is the console's path on the admin listener.
const Prefix = "/console/"

//go:embed assets
var assets embed.FS

// Handler serves the assets under Prefix. The browser revalidates them on
// each load (no-cache), so that a node upgraded to another version serves
// its own.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic("console: embedded assets missing: " + err.Error())
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'")
		files.ServeHTTP(w, r)
	})
}
