package adminauth

import (
	stdlog "log"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config is what Handler checks.
type Config struct {
	// Tokens are the bearer tokens accepted (Authorization: Bearer <token>);
	// nil accepts none.
	Tokens *Tokens
	// ClientCerts accepts a request whose TLS connection carries a client
	// certificate that the listener verified (its tls.Config has the CA
	// and ClientAuth: see tlsreload.Reloader).
	ClientCerts bool
	// Open are paths served to anyone (the health endpoints, when
	// admin_health_unauthenticated is set).
	Open []string
	// Logger takes the refusals, at most refusalLogRate lines a second.
	Logger *slog.Logger
}

// refusalLogRate bounds the refusal lines per second.
const refusalLogRate = 5

// Handler returns next behind the authentication of cfg. With neither
// tokens nor client certificates it returns next as it is. A request
// without credentials gets 401 (with WWW-Authenticate: Bearer), one with a
// token that is not valid 403; both with a body that says only that, and a
// log line (rate-limited) naming the client's address, the method, the
// path and the reason, never the token.
func Handler(next http.Handler, cfg Config) http.Handler {
	if cfg.Tokens == nil && !cfg.ClientCerts {
		return next
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lim := &limiter{rate: refusalLogRate}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(cfg.Open, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if cfg.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			next.ServeHTTP(w, r)
			return
		}
		token, given := bearer(r)
		if given && cfg.Tokens != nil && cfg.Tokens.Valid(token) {
			next.ServeHTTP(w, r)
			return
		}
		code, reason := http.StatusUnauthorized, "no credentials"
		if given {
			code, reason = http.StatusForbidden, "invalid bearer token"
		}
		if suppressed, ok := lim.allow(time.Now()); ok {
			log.Warn("admin: request refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path,
				"reason", reason, "status", code, "suppressed", suppressed)
		}
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shale-admin"`)
		}
		http.Error(w, http.StatusText(code), code)
	})
}

// bearer returns the token of an "Authorization: Bearer <token>" header,
// and whether the request carried an Authorization header at all.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(token), true
}

// limiter allows rate events per second; allow reports how many it refused
// since the last one it allowed.
type limiter struct {
	rate int

	mu         sync.Mutex
	second     time.Time
	n          int
	suppressed int
}

func (l *limiter) allow(now time.Time) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := now.Truncate(time.Second); !s.Equal(l.second) {
		l.second, l.n = s, 0
	}
	if l.n >= l.rate {
		l.suppressed++
		return 0, false
	}
	l.n++
	s := l.suppressed
	l.suppressed = 0
	return s, true
}

// ErrorLog is an http.Server's ErrorLog that passes its lines (a failed
// TLS handshake: an untrusted or missing client certificate, a plain HTTP
// request to the HTTPS port) to logger at Warn, at most refusalLogRate a
// second.
func ErrorLog(logger *slog.Logger) *stdlog.Logger {
	return stdlog.New(&errorWriter{log: logger, lim: &limiter{rate: refusalLogRate}}, "", 0)
}

type errorWriter struct {
	log *slog.Logger
	lim *limiter
}

func (e *errorWriter) Write(p []byte) (int, error) {
	if suppressed, ok := e.lim.allow(time.Now()); ok {
		e.log.Warn("admin: "+strings.TrimSpace(string(p)), "suppressed", suppressed)
	}
	return len(p), nil
}
