package kafka

// ApiVersions (key 18), versions 0-5.
//
// Behaviour:
// * Answers the API keys and version ranges of the Registry, computed from
//   what is registered, never a hand list.
// * A request above v5 cannot be decoded; it is answered at v0 with
//   UNSUPPORTED_VERSION and the ApiVersions range only, as Kafka does
//   (KIP-511), so that the client retries at a version we serve.
// * v3+: INVALID_REQUEST when ClientSoftwareName or ClientSoftwareVersion do
//   not match [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, as Kafka does.
// * v5+ (KIP-1242): a client that found this node in metadata names the
//   cluster and node it expects (ClusterID and NodeID; a seed connection
//   names neither). One without the other is INVALID_REQUEST; a cluster id
//   or node id that is not this node's (Registry.SetIdentity) is
//   REBOOTSTRAP_REQUIRED, with no API keys, so that a client whose
//   metadata sent it to the wrong node (an address reused by another
//   cluster or node) starts again from its seeds instead of talking to the
//   wrong broker.
//
// Version notes:
// * v1: ThrottleMillis
// * v3: ClientSoftwareName, ClientSoftwareVersion; flexible request (header
//   v2), but the response header is never flexible, so that any client can
//   read the v0 downgrade answer.
// * v3: SupportedFeatures, FinalizedFeaturesEpoch and FinalizedFeatures
//   (KIP-584, tagged fields) from the registry's features (SetFeature):
//   Shale advertises transaction.version (docs/transactions.md) and
//   group.version, finalized at 1 (KIP-848's consumer groups). A feature
//   finalized at level 0 is left out of FinalizedFeatures, as Kafka does.
//   The levels are the node's configuration until UpdateFeatures finalizes
//   them for the cluster (SetFinalized); the epoch is 1, then grows with
//   each update of the cluster's finalized levels.
// * v4: SupportedFeatures.MinVersion may be 0 (KAFKA-17011): a v3 answer
//   lists a feature whose minimum is 0 with minimum 1, as Kafka does.
// * v5: ClusterID and NodeID in the request (KIP-1242).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	apiVersionsKey        = int16(kmsg.ApiVersions)
	apiVersionsMaxVersion = int16(5)
)

func (r *Registry) handleApiVersions(_ context.Context, req *Request) (Reply, error) {
	kreq := req.Msg.(*kmsg.ApiVersionsRequest)
	resp := kreq.ResponseKind().(*kmsg.ApiVersionsResponse)
	if kreq.Version >= 3 && (!validSoftwareToken(kreq.ClientSoftwareName) || !validSoftwareToken(kreq.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return Reply{Response: resp}, nil
	}
	if kreq.Version >= 5 {
		hasCluster, hasNode := kreq.ClusterID != nil, kreq.NodeID != -1
		id := r.identity.Load()
		switch {
		case hasCluster != hasNode:
			resp.ErrorCode = kerr.InvalidRequest.Code
			return Reply{Response: resp}, nil
		case hasCluster && id != nil && (*kreq.ClusterID != id.ClusterID || kreq.NodeID != id.NodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return Reply{Response: resp}, nil
		}
	}
	if kreq.Version >= 3 && req.Conn != nil {
		req.Conn.software.Store(&ClientSoftware{Name: kreq.ClientSoftwareName, Version: kreq.ClientSoftwareVersion})
	}
	resp.ApiKeys = r.apiKeys()
	if kreq.Version >= 3 {
		if fs, epoch := r.Features(); len(fs) > 0 {
			resp.FinalizedFeaturesEpoch = epoch
			for _, f := range fs {
				sf := kmsg.NewApiVersionsResponseSupportedFeature()
				sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.MinLevel, f.MaxLevel
				if kreq.Version < 4 && sf.MinVersion == 0 {
					sf.MinVersion = 1 // before KAFKA-17011 a minimum of 0 broke clients
				}
				resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
				if f.Finalized > 0 {
					ff := kmsg.NewApiVersionsResponseFinalizedFeature()
					ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.Name, f.Finalized, f.Finalized
					resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
				}
			}
		}
	}
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
