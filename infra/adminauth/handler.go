package adminauth

import (
	"context"
	"encoding/base64"
	stdlog "log"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config is what Handler checks.
type Config struct {
	// Tokens are the bearer tokens accepted (Authorization: Bearer <token>),
	// each with its role; nil accepts none.
	Tokens *Tokens
	// ClientCerts accepts a request whose TLS connection carries a client
	// certificate that the listener verified (its tls.Config has the CA
	// and ClientAuth: see tlsreload.Reloader), with RoleAdmin.
	ClientCerts bool
	// Open are paths served to anyone (the health endpoints, when
	// admin_health_unauthenticated is set).
	Open []string
	// Logger takes the refusals, at most refusalLogRate lines a second.
	Logger *slog.Logger
}

// refusalLogRate bounds the refusal lines per second.
const refusalLogRate = 5

// Handler returns next behind the authentication of cfg. A request
// without credentials gets 401 (with WWW-Authenticate: Bearer and Basic, so
// that a browser asks for the token), one with a token that is not valid
// 403; both with a body that says only that, and a log line (rate-limited)
// naming the client's address, the method, the path and the reason, never
// the token. A token is taken as "Authorization: Bearer <token>" or, from
// a browser, as the password of "Authorization: Basic" (any user name).
//
// A browser sends Basic credentials and client certificates by itself,
// also with a form another site makes it post; so a request that may
// change something (any method but GET, HEAD and OPTIONS) from another
// origin (its Origin header names another host, or Sec-Fetch-Site says
// cross-site) is refused with 403 whatever its credentials, and with
// neither tokens nor client certificates too. Programs send no Origin.
//
// A request that may change something needs RoleAdmin: a valid read-only
// token gets 403 with a body saying that the token is read-only and what
// the request needed. A verified client certificate, and every request to
// a listener with neither tokens nor client certificates, has RoleAdmin.
// next finds the request's role with RoleFrom (RoleNone on an Open path
// served without credentials).
func Handler(next http.Handler, cfg Config) http.Handler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lim := &limiter{rate: refusalLogRate}
	refuse := func(w http.ResponseWriter, r *http.Request, code int, reason string) {
		if suppressed, ok := lim.allow(time.Now()); ok {
			log.Warn("admin: request refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path,
				"reason", reason, "status", code, "suppressed", suppressed)
		}
		if code == http.StatusUnauthorized {
			w.Header().Add("WWW-Authenticate", `Bearer realm="shale-admin"`)
			w.Header().Add("WWW-Authenticate", `Basic realm="shale-admin", charset="UTF-8"`)
		}
		http.Error(w, http.StatusText(code), code)
	}
	if cfg.Tokens == nil && !cfg.ClientCerts {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if crossOriginWrite(r) {
				refuse(w, r, http.StatusForbidden, "cross-origin write")
				return
			}
			next.ServeHTTP(w, withRole(r, RoleAdmin))
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossOriginWrite(r) {
			refuse(w, r, http.StatusForbidden, "cross-origin write")
			return
		}
		if slices.Contains(cfg.Open, r.URL.Path) {
			next.ServeHTTP(w, withRole(r, RoleNone))
			return
		}
		if cfg.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			next.ServeHTTP(w, withRole(r, RoleAdmin))
			return
		}
		token, given := bearer(r)
		role := RoleNone
		if given != nothingGiven && cfg.Tokens != nil {
			role = cfg.Tokens.Role(token)
		}
		if role == RoleRead && isWrite(r) {
			if suppressed, ok := lim.allow(time.Now()); ok {
				log.Warn("admin: request refused", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path,
					"reason", "read-only token", "status", http.StatusForbidden, "suppressed", suppressed)
			}
			http.Error(w, "Forbidden: this token is read-only; "+r.Method+" "+r.URL.Path+" needs an admin token", http.StatusForbidden)
			return
		}
		if role != RoleNone {
			next.ServeHTTP(w, withRole(r, role))
			return
		}
		switch {
		case given == basicGiven:
			// A browser asks again for a token typed wrong.
			refuse(w, r, http.StatusUnauthorized, "invalid basic credentials")
		case given != nothingGiven:
			refuse(w, r, http.StatusForbidden, "invalid bearer token")
		default:
			refuse(w, r, http.StatusUnauthorized, "no credentials")
		}
	})
}

// What an Authorization header held.
const (
	nothingGiven = iota
	bearerGiven
	basicGiven
	malformedGiven
)

// bearer returns the token of an "Authorization: Bearer <token>" header,
// or the password of an "Authorization: Basic" one, and what the request
// carried.
func bearer(r *http.Request) (string, int) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", nothingGiven
	}
	scheme, token, ok := strings.Cut(h, " ")
	switch {
	case ok && strings.EqualFold(scheme, "Bearer"):
		return strings.TrimSpace(token), bearerGiven
	case ok && strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token))
		if err != nil {
			return "", malformedGiven
		}
		if _, password, ok := strings.Cut(string(raw), ":"); ok {
			return password, basicGiven
		}
	}
	return "", malformedGiven
}

// roleKey is the request context's key of its Role.
type roleKey struct{}

func withRole(r *http.Request, role Role) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), roleKey{}, role))
}

// RoleFrom returns the role Handler gave the request of ctx, RoleNone
// when it did not serve it.
func RoleFrom(ctx context.Context) Role {
	role, _ := ctx.Value(roleKey{}).(Role)
	return role
}

// isWrite reports a method that may change something: any but GET, HEAD
// and OPTIONS.
func isWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// crossOriginWrite reports a request that may change something (a method
// other than GET, HEAD, OPTIONS) sent by a browser from a page of another
// origin: its Origin header's host is not the request's Host, or
// Sec-Fetch-Site is cross-site or same-site.
func crossOriginWrite(r *http.Request) bool {
	if !isWrite(r) {
		return false
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s == "cross-site" || s == "same-site" {
		return true
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host)
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
