package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// ErrJWKS: a JWKS document that holds no usable key, or that cannot be
// read or fetched.
var ErrJWKS = errors.New("sasl: JWKS")

// JWK is one public key of a JWKS (RFC 7517), an RSA or an EC one.
type JWK struct {
	Kid string // the key id tokens name in their kid header
	alg string // the JWK's alg, when it names one: the only algorithm the key verifies
	crv string // an EC key's curve
	pub crypto.PublicKey
}

// JWKS is a parsed key set. It is immutable once made.
type JWKS struct{ keys []*JWK }

// minRSABits is the smallest RSA modulus accepted (RFC 7518 section 3.3).
const minRSABits = 2048

// maxJWKSBytes bounds a JWKS document.
const maxJWKSBytes = 1 << 20

// ParseJWKS reads a JWKS document. Keys of another type than RSA and EC (an
// "oct" secret, an OKP key), keys for another use than "sig", and
// malformed keys are left out; a set left with no key is ErrJWKS.
func ParseJWKS(b []byte) (*JWKS, error) {
	var doc struct {
		Keys []struct {
			Kty string `json:"kty"`
			Use string `json:"use"`
			Alg string `json:"alg"`
			Kid string `json:"kid"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("%w: document larger than %d bytes", ErrJWKS, maxJWKSBytes)
	}
	if err := strictJSON(b, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJWKS, err)
	}
	set := &JWKS{}
	for _, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if a, ok := jwtAlgs[k.Alg]; k.Alg != "" && (!ok || a.kty != k.Kty) {
			continue // a key for an algorithm not allowed here, or of the wrong type
		}
		key := &JWK{Kid: k.Kid, alg: k.Alg}
		switch k.Kty {
		case "RSA":
			n, err1 := b64(k.N)
			e, err2 := b64(k.E)
			if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
				continue
			}
			pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
			if pub.N.BitLen() < minRSABits || pub.E < 3 || pub.E%2 == 0 {
				continue
			}
			key.pub = pub
		case "EC":
			curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[k.Crv]
			if curve == nil {
				continue
			}
			x, err1 := b64(k.X)
			y, err2 := b64(k.Y)
			size := (curve.Params().BitSize + 7) / 8
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				continue
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
			if err != nil {
				continue // not a point of the curve
			}
			key.pub, key.crv = pub, k.Crv
		default:
			continue
		}
		set.keys = append(set.keys, key)
	}
	if len(set.keys) == 0 {
		return nil, fmt.Errorf("%w: no usable RSA or EC signing key", ErrJWKS)
	}
	return set, nil
}

// Len is the number of usable keys.
func (s *JWKS) Len() int { return len(s.keys) }

// candidates returns the keys that may have signed a token with kid and
// alg: the key of that id, or, for a token without a kid, every key of the
// algorithm's type (each is tried).
func (s *JWKS) candidates(kid, alg string) []*JWK {
	var out []*JWK
	kty := jwtAlgs[alg].kty
	for _, k := range s.keys {
		switch {
		case kid != "" && k.Kid == kid:
			return []*JWK{k}
		case kid == "" && keyType(k) == kty && (k.alg == "" || k.alg == alg):
			out = append(out, k)
		}
	}
	return out
}

func keyType(k *JWK) string {
	if _, ok := k.pub.(*rsa.PublicKey); ok {
		return "RSA"
	}
	return "EC"
}

func (s *JWKS) has(kid string) bool {
	for _, k := range s.keys {
		if k.Kid == kid {
			return true
		}
	}
	return false
}

// JWKSConfig configures a JWKSource: Kafka's
// sasl.oauthbearer.jwks.endpoint.* settings.
type JWKSConfig struct {
	// URL is sasl.oauthbearer.jwks.endpoint.url: an http(s) URL, or a
	// file:// one (file:///etc/shale/jwks.json) read from disk.
	URL string
	// Refresh is sasl.oauthbearer.jwks.endpoint.refresh.ms: how old a
	// fetched set may get before the next login fetches it again. Zero is
	// one hour. A file is checked for changes at every login instead.
	Refresh time.Duration
	// RetryBackoff is the least time between two fetches, failed or for a
	// token whose kid the set does not hold (so that tokens naming random
	// kids cannot make the node hammer the endpoint). Zero is 10 seconds.
	RetryBackoff time.Duration
	// Timeout bounds one fetch. Zero is 10 seconds.
	Timeout time.Duration
	// Client makes the requests; nil is a client with Timeout.
	Client *http.Client
}

// JWKSource serves the current key set of a JWKS URL or file. A file is
// reloaded when its size or modification time changes (checked at each
// login, as the TLS files are); a URL is fetched at the first login, again
// once the set is older than Refresh, and when a token names a kid the set
// does not hold (rotation at the provider), at most once per RetryBackoff.
// A fetch or reload that fails keeps the last good set and logs. Its
// methods are safe for concurrent use; it starts no goroutine.
type JWKSource struct {
	cfg  JWKSConfig
	file string // the path of a file:// URL; empty for http(s)
	log  *slog.Logger
	now  func() time.Time

	fetchMu sync.Mutex // held for one fetch or reload; taken before mu

	mu struct {
		sync.Mutex
		set     *JWKS
		fetched time.Time // when set was fetched (a URL)
		tried   time.Time // the last fetch attempt (a URL)
		stamp   fileStamp // of the file set was read from
		bad     fileStamp // of the file whose last read failed, logged once
	}
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func (a fileStamp) equal(b fileStamp) bool { return a.size == b.size && a.mod.Equal(b.mod) }

// NewJWKSource checks cfg and, for a file, reads the set once (a file that
// does not load is an error at start). A URL is fetched at the first login.
// A nil log discards logs.
func NewJWKSource(cfg JWKSConfig, log *slog.Logger) (*JWKSource, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Hour
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 10 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: endpoint URL: %v", ErrJWKS, err)
	}
	s := &JWKSource{cfg: cfg, log: log, now: time.Now}
	switch u.Scheme {
	case "file":
		if u.Path == "" {
			return nil, fmt.Errorf("%w: file URL %q without a path", ErrJWKS, cfg.URL)
		}
		s.file = u.Path
		if err := s.reloadFile(); err != nil {
			return nil, err
		}
	case "http", "https":
	default:
		return nil, fmt.Errorf("%w: endpoint URL %q: want https://, http:// or file://", ErrJWKS, cfg.URL)
	}
	return s, nil
}

// keys returns the set to verify a token naming kid with, fetching or
// reloading it first when it is due. It returns nil when no set was ever
// loaded.
func (s *JWKSource) keys(ctx context.Context, kid string) *JWKS {
	if s.file != "" {
		s.reloadFile()
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.mu.set
	}
	if set, due := s.due(kid); !due {
		return set
	}
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	// Another login may have fetched while this one waited.
	if set, due := s.due(kid); !due {
		return set
	}
	s.mu.Lock()
	s.mu.tried = s.now()
	s.mu.Unlock()
	set, err := s.fetch(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.log.Warn("sasl: JWKS fetch failed; keeping the previous keys", "url", s.cfg.URL, "err", err)
		return s.mu.set
	}
	s.mu.set, s.mu.fetched = set, s.now()
	return set
}

// due reports whether the URL's set should be fetched before verifying a
// token naming kid, and returns the current set.
func (s *JWKSource) due(kid string) (*JWKS, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if !s.mu.tried.IsZero() && now.Sub(s.mu.tried) < s.cfg.RetryBackoff {
		return s.mu.set, false
	}
	stale := s.mu.set == nil || now.Sub(s.mu.fetched) >= s.cfg.Refresh
	unknown := kid != "" && s.mu.set != nil && !s.mu.set.has(kid)
	return s.mu.set, stale || unknown
}

// fetch GETs the URL within the timeout.
func (s *JWKSource) fetch(ctx context.Context) (*JWKS, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJWKS, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJWKS, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s answered %s", ErrJWKS, s.cfg.URL, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJWKS, err)
	}
	return ParseJWKS(b)
}

// reloadFile reads the file when its stamp changed since the last read.
func (s *JWKSource) reloadFile() error {
	fi, err := os.Stat(s.file)
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.mu.set == nil {
			return fmt.Errorf("%w: %v", ErrJWKS, err)
		}
		return nil // keep the set while the file is being replaced
	}
	st := fileStamp{size: fi.Size(), mod: fi.ModTime()}
	s.mu.Lock()
	unchanged := s.mu.set != nil && (st.equal(s.mu.stamp) || st.equal(s.mu.bad))
	s.mu.Unlock()
	if unchanged {
		return nil
	}
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	b, err := os.ReadFile(s.file)
	var set *JWKS
	if err == nil {
		set, err = ParseJWKS(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.mu.set == nil {
			return fmt.Errorf("%w: %s: %w", ErrJWKS, s.file, err)
		}
		if !st.equal(s.mu.bad) {
			s.log.Warn("sasl: JWKS file changed but does not load; keeping the previous keys", "file", s.file, "err", err)
		}
		s.mu.bad = st
		return nil
	}
	if s.mu.set != nil {
		s.log.Info("sasl: JWKS file reloaded", "file", s.file, "keys", set.Len())
	}
	s.mu.set, s.mu.stamp, s.mu.bad = set, st, fileStamp{}
	return nil
}
