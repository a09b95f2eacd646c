// Package testjwt is a test identity provider: signing keys, their JWKS,
// and JWTs signed with them (or, to test a validator, with a header that
// lies), for the OAUTHBEARER tests.
package testjwt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	_ "crypto/sha256"
	_ "crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
)

// algs are the JWS algorithms Sign knows.
var algs = map[string]struct {
	hash crypto.Hash
	pss  bool
}{
	"RS256": {crypto.SHA256, false}, "RS384": {crypto.SHA384, false}, "RS512": {crypto.SHA512, false},
	"PS256": {crypto.SHA256, true}, "PS384": {crypto.SHA384, true}, "PS512": {crypto.SHA512, true},
	"ES256": {crypto.SHA256, false}, "ES384": {crypto.SHA384, false}, "ES512": {crypto.SHA512, false},
}

// Key is a signing key of a test identity provider, with its JWK.
type Key struct {
	Kid string
	Alg string // the algorithm Sign uses
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
}

// NewKey makes a key for alg (RS256..., PS256..., ES256...).
func NewKey(t testing.TB, kid, alg string) *Key {
	t.Helper()
	k := &Key{Kid: kid, Alg: alg}
	var err error
	switch alg[:2] {
	case "RS", "PS":
		k.rsa, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES":
		curve := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		k.ec, err = ecdsa.GenerateKey(curve, rand.Reader)
	}
	if err != nil || (k.rsa == nil && k.ec == nil) {
		t.Fatalf("key for %s: %v", alg, err)
	}
	return k
}

// JWK is the key's public JWK as a JSON object (with "alg" when withAlg).
func (k *Key) JWK(withAlg bool) map[string]string {
	enc := base64.RawURLEncoding.EncodeToString
	m := map[string]string{"kid": k.Kid, "use": "sig"}
	if withAlg {
		m["alg"] = k.Alg
	}
	if k.rsa != nil {
		m["kty"], m["n"], m["e"] = "RSA", enc(k.rsa.N.Bytes()), enc(big.NewInt(int64(k.rsa.E)).Bytes())
		return m
	}
	size := (k.ec.Curve.Params().BitSize + 7) / 8
	pt, _ := k.ec.PublicKey.Bytes()
	m["kty"], m["crv"] = "EC", k.ec.Curve.Params().Name
	m["x"], m["y"] = enc(pt[1:1+size]), enc(pt[1+size:])
	return m
}

// JWKSOf is the JSON of a JWKS holding keys (without their alg).
func JWKSOf(keys ...*Key) []byte {
	var ks []map[string]string
	for _, k := range keys {
		ks = append(ks, k.JWK(false))
	}
	b, _ := json.Marshal(map[string]any{"keys": ks})
	return b
}

// Sign makes a JWS with header {"alg": k.Alg, "kid": k.Kid} (overridden
// by hdr) over claims.
func (k *Key) Sign(t testing.TB, hdr map[string]any, claims map[string]any) string {
	t.Helper()
	h := map[string]any{"alg": k.Alg, "kid": k.Kid, "typ": "JWT"}
	for n, v := range hdr {
		if v == nil {
			delete(h, n)
		} else {
			h[n] = v
		}
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(hb) + "." + enc(cb)
	alg := k.Alg
	if a, ok := h["alg"].(string); ok && a != k.Alg {
		alg = a // a header that lies about the algorithm: sign as it says where possible
	}
	return input + "." + enc(k.signAs(t, alg, []byte(input)))
}

func (k *Key) signAs(t testing.TB, alg string, input []byte) []byte {
	t.Helper()
	if alg == "none" {
		return nil
	}
	if alg[:2] == "HS" {
		// Alg confusion: the public key's bytes as the HMAC secret.
		secret, _ := json.Marshal(k.JWK(false))
		m := hmac.New(crypto.SHA256.New, secret)
		m.Write(input)
		return m.Sum(nil)
	}
	a := algs[alg]
	h := a.hash.New()
	h.Write(input)
	digest := h.Sum(nil)
	var sig []byte
	var err error
	switch {
	case k.rsa != nil && a.pss:
		sig, err = rsa.SignPSS(rand.Reader, k.rsa, a.hash, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case k.rsa != nil:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.rsa, a.hash, digest)
	default:
		var r, s *big.Int
		r, s, err = ecdsa.Sign(rand.Reader, k.ec, digest)
		if err == nil {
			size := (k.ec.Curve.Params().BitSize + 7) / 8
			sig = make([]byte, 2*size)
			r.FillBytes(sig[:size])
			s.FillBytes(sig[size:])
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return sig
}
