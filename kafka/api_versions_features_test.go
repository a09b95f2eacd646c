package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestApiVersionsFeatures: v3+ answers the registry's features (KIP-584):
// SupportedFeatures with their ranges (a minimum of 0 shown as 1 below v4,
// KAFKA-17011), FinalizedFeatures only for a level above 0, and a
// finalized epoch; v2 has no such fields.
func TestApiVersionsFeatures(t *testing.T) {
	ts := startServer(t, ServerConfig{}, func(r *Registry) {
		r.SetFeature(Feature{Name: "transaction.version", MinLevel: 0, MaxLevel: 2, Finalized: 2})
		r.SetFeature(Feature{Name: "group.version", MinLevel: 0, MaxLevel: 1, Finalized: 0})
	})
	c := dialRaw(t, ts.addr)
	for i, v := range []int16{3, 4} {
		req := versioned(kmsg.NewPtrApiVersionsRequest(), v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		c.send(req, int32(i))
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		c.recv(resp)
		if resp.ErrorCode != 0 || resp.FinalizedFeaturesEpoch < 0 {
			t.Fatalf("v%d: error %d, finalized epoch %d", v, resp.ErrorCode, resp.FinalizedFeaturesEpoch)
		}
		wantMin := int16(0)
		if v < 4 {
			wantMin = 1
		}
		supported := map[string][2]int16{}
		for _, f := range resp.SupportedFeatures {
			supported[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
		}
		if supported["transaction.version"] != [2]int16{wantMin, 2} || supported["group.version"] != [2]int16{wantMin, 1} {
			t.Fatalf("v%d: supported features %v", v, supported)
		}
		if len(resp.FinalizedFeatures) != 1 || resp.FinalizedFeatures[0].Name != "transaction.version" ||
			resp.FinalizedFeatures[0].MinVersionLevel != 2 || resp.FinalizedFeatures[0].MaxVersionLevel != 2 {
			t.Fatalf("v%d: finalized features %+v", v, resp.FinalizedFeatures)
		}
	}
	req := versioned(kmsg.NewPtrApiVersionsRequest(), 2)
	c.send(req, 9)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	c.recv(resp)
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("v2: %+v", resp)
	}
}

func TestSetFeatureRejectsMisuse(t *testing.T) {
	for _, f := range []Feature{
		{Name: "a", MinLevel: 0, MaxLevel: 2, Finalized: 3},
		{Name: "b", MinLevel: 1, MaxLevel: 2, Finalized: -1},
		{Name: "c", MinLevel: 2, MaxLevel: 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetFeature(%+v) did not panic", f)
				}
			}()
			NewRegistry().SetFeature(f)
		}()
	}
}

// TestApiVersionsIdentity: v5 (KIP-1242) checks the cluster and node the
// client names against the registry's identity: a match (or a seed's
// request, naming neither) is answered with the API keys, another cluster
// or node REBOOTSTRAP_REQUIRED, and one without the other
// INVALID_REQUEST; v4 has no such fields.
func TestApiVersionsIdentity(t *testing.T) {
	ts := startServer(t, ServerConfig{}, func(r *Registry) {
		r.SetIdentity(Identity{ClusterID: "c1", NodeID: 3})
	})
	c := dialRaw(t, ts.addr)
	for i, tc := range []struct {
		version int16
		cluster *string
		node    int32
		want    int16
	}{
		{5, nil, -1, 0},
		{5, kmsg.StringPtr("c1"), 3, 0},
		{5, kmsg.StringPtr("c2"), 3, kerr.RebootstrapRequired.Code},
		{5, kmsg.StringPtr("c1"), 4, kerr.RebootstrapRequired.Code},
		{5, kmsg.StringPtr("c1"), -1, kerr.InvalidRequest.Code},
		{5, nil, 3, kerr.InvalidRequest.Code},
		{4, kmsg.StringPtr("c2"), 4, 0}, // not encoded before v5
	} {
		req := versioned(kmsg.NewPtrApiVersionsRequest(), tc.version)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		c.send(req, int32(i))
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		c.recv(resp)
		if resp.ErrorCode != tc.want || (tc.want == 0) != (len(resp.ApiKeys) > 0) {
			t.Fatalf("v%d cluster %v node %d: error %d with %d API keys, want error %d", tc.version, tc.cluster, tc.node, resp.ErrorCode, len(resp.ApiKeys), tc.want)
		}
	}
}
