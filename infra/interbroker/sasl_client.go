package interbroker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// The client side of KIP-152 on a raw connection: SaslHandshake v1 names
// the mechanism, then SaslAuthenticate v1 requests carry the mechanism's
// messages until it is done. Both versions have the classic (not flexible)
// response header, so a response is its size, the correlation id and the
// body.

const (
	saslHandshakeVersion    = 1
	saslAuthenticateVersion = 1
	maxSASLResponse         = 1 << 20
)

var errSASLResponse = errors.New("malformed SASL response")

// authenticate logs in on nc with mech as user and returns the session lifetime
// the peer set (0 for none). A refusal is ErrAuthentication; ctx's
// deadline is set on nc by the caller.
func authenticate(ctx context.Context, nc net.Conn, mech sasl.Mechanism, user, addr, clientID string) (time.Duration, error) {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	var corr int32
	roundTrip := func(req kmsg.Request, resp kmsg.Response) error {
		corr++
		if _, err := nc.Write(f.AppendRequest(nil, req, corr)); err != nil {
			return err
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return err
		}
		n := int(int32(binary.BigEndian.Uint32(size[:])))
		if n < 4 || n > maxSASLResponse {
			return fmt.Errorf("%w: size %d", errSASLResponse, n)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(nc, body); err != nil {
			return err
		}
		if got := int32(binary.BigEndian.Uint32(body)); got != corr {
			return fmt.Errorf("%w: correlation id %d, want %d", errSASLResponse, got, corr)
		}
		resp.SetVersion(req.GetVersion())
		if err := resp.ReadFrom(body[4:]); err != nil {
			return fmt.Errorf("%w: %w", errSASLResponse, err)
		}
		return nil
	}

	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = saslHandshakeVersion
	hs.Mechanism = mech.Name()
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	if err := roundTrip(hs, hsResp); err != nil {
		return 0, fmt.Errorf("SaslHandshake with %s: %w", addr, err)
	}
	if hsResp.ErrorCode != 0 {
		if !slices.Contains(hsResp.SupportedMechanisms, mech.Name()) {
			return 0, fmt.Errorf("%w with %s: mechanism %s not enabled there (it offers %v): %w",
				ErrAuthentication, addr, mech.Name(), hsResp.SupportedMechanisms, kerr.ErrorForCode(hsResp.ErrorCode))
		}
		return 0, fmt.Errorf("SaslHandshake with %s: %w", addr, kerr.ErrorForCode(hsResp.ErrorCode))
	}

	session, msg, err := mech.Authenticate(ctx, addr)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrAuthentication, err)
	}
	var lifetime time.Duration
	// As kgo: write until the mechanism is done and has nothing more to
	// send; every SaslAuthenticate request gets a response (KIP-152).
	for done := false; !done || len(msg) > 0; {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = saslAuthenticateVersion
		req.SASLAuthBytes = msg
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := roundTrip(req, resp); err != nil {
			return 0, fmt.Errorf("SaslAuthenticate with %s: %w", addr, err)
		}
		if resp.ErrorCode != 0 {
			detail := ""
			if resp.ErrorMessage != nil {
				detail = ": " + *resp.ErrorMessage
			}
			return 0, fmt.Errorf("%w with %s as %s (%s)%s: %w", ErrAuthentication, addr, user, mech.Name(), detail,
				kerr.ErrorForCode(resp.ErrorCode))
		}
		lifetime = time.Duration(min(resp.SessionLifetimeMillis, int64(365*24*time.Hour/time.Millisecond))) * time.Millisecond
		msg = nil
		if !done {
			if done, msg, err = session.Challenge(resp.SASLAuthBytes); err != nil {
				return 0, fmt.Errorf("%w with %s: %w", ErrAuthentication, addr, err)
			}
		}
	}
	return lifetime, nil
}
