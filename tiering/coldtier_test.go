package tiering

import (
	"errors"
	"strings"
	"testing"

	"github.com/shale-io/shale/controlplane"
)

func TestColdTierConflict(t *testing.T) {
	s3 := func(node int32, bucket string) controlplane.ColdTier {
		return controlplane.ColdTier{NodeID: node, Shared: true, Location: "s3://" + bucket}
	}
	fs := func(node int32) controlplane.ColdTier {
		return controlplane.ColdTier{NodeID: node, Location: "/data/" + string(rune('0'+node)) + "/bucket"}
	}
	for _, tc := range []struct {
		name     string
		own      controlplane.ColdTier
		all      []controlplane.ColdTier
		conflict bool
	}{
		{"alone on its filesystem bucket", fs(1), []controlplane.ColdTier{fs(1)}, false},
		{"alone, its record not seen yet", fs(1), nil, false},
		{"one S3 bucket for all", s3(1, "b"), []controlplane.ColdTier{s3(1, "b"), s3(2, "b"), s3(3, "b")}, false},
		{"two filesystem buckets", fs(1), []controlplane.ColdTier{fs(1), fs(2)}, true},
		{"S3 beside a filesystem bucket", s3(1, "b"), []controlplane.ColdTier{s3(1, "b"), fs(2)}, true},
		{"a filesystem bucket beside S3", fs(2), []controlplane.ColdTier{s3(1, "b"), fs(2)}, true},
		{"two S3 buckets", s3(1, "b"), []controlplane.ColdTier{s3(1, "b"), s3(2, "c")}, true},
	} {
		err := ColdTierConflict(tc.own, tc.all)
		if (err != nil) != tc.conflict {
			t.Fatalf("%s: %v, want conflict %v", tc.name, err, tc.conflict)
		}
		if err != nil && (!errors.Is(err, ErrColdTierNotShared) || !strings.Contains(err.Error(), "--s3-bucket")) {
			t.Fatalf("%s: %v does not wrap ErrColdTierNotShared or say what to configure", tc.name, err)
		}
	}
}
