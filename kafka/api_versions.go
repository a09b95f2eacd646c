package kafka

// ApiVersions (key 18), versions 0-4.
//
// Behaviour:
// * Answers the API keys and version ranges of the Registry, computed from
//   what is registered, never a hand list.
// * A request above v4 cannot be decoded; it is answered at v0 with
//   UNSUPPORTED_VERSION and the ApiVersions range only, as Kafka does
//   (KIP-511), so that the client retries at a version we serve.
// * v3+: INVALID_REQUEST when ClientSoftwareName or ClientSoftwareVersion do
//   not match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, as Kafka does.
//
// Version notes:
// * v1: ThrottleMillis
// * v3: ClientSoftwareName, ClientSoftwareVersion; flexible request (header
//   v2), but the response header is never flexible, so that any client can
//   read the v0 downgrade answer.
// * v4: SupportedFeatures.MinVersion may be 0 (KAFKA-17011); no features are
//   advertised, so v4 answers as v3.
// * No feature negotiation (KIP-584) is advertised.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	apiVersionsKey        = int16(kmsg.ApiVersions)
	apiVersionsMaxVersion = int16(4)
)

func (r *Registry) handleApiVersions(_ context.Context, req *Request) (Reply, error) {
	kreq := req.Msg.(*kmsg.ApiVersionsRequest)
	resp := kreq.ResponseKind().(*kmsg.ApiVersionsResponse)
	if kreq.Version >= 3 && (!validSoftwareToken(kreq.ClientSoftwareName) || !validSoftwareToken(kreq.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return Reply{Response: resp}, nil
	}
	resp.ApiKeys = r.apiKeys()
	return Reply{Response: resp}, nil
}

// unsupportedApiVersions is the answer to an ApiVersions request whose
// version we do not serve: v0, UNSUPPORTED_VERSION, and our ApiVersions
// range.
func (r *Registry) unsupportedApiVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	if reg, ok := r.lookup(apiVersionsKey); ok {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = apiVersionsKey, reg.min, reg.max
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
	}
	return resp
}

// validSoftwareToken reports whether s matches Kafka's pattern for client
// software names and versions.
func validSoftwareToken(s string) bool {
	alnum := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}
