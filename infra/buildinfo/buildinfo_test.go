package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestLine(t *testing.T) {
	for _, c := range []struct {
		v    Info
		want string
	}{
		{Info{Version: "(devel)", GoVersion: "go1.26"}, "shale (devel) go1.26"},
		{Info{Version: "(devel)", GoVersion: "go1.26", Revision: "0123456789abcdef", Modified: true}, "shale (devel) 0123456789ab+dirty go1.26"},
		{Info{Version: "v0.0.0-20261201132248-0123456789ab+dirty", GoVersion: "go1.26", Revision: "0123456789abcdef", Modified: true},
			"shale v0.0.0-20261201132248-0123456789ab+dirty go1.26"},
		{Info{Version: "v1.2.0", GoVersion: "go1.26", Revision: "0123456789abcdef"}, "shale v1.2.0 0123456789ab go1.26"},
	} {
		if got := c.v.Line(); got != c.want {
			t.Errorf("Line(%+v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/shale-io/shale", Version: "v1.2.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.time", Value: "2026-12-05T07:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
			{Key: "GOOS", Value: "linux"},
			{Key: "GOARCH", Value: "amd64"},
			{Key: "-tags", Value: "shale_invariants"},
		},
	}
	got := FromBuildInfo(bi)
	want := Info{Module: "github.com/shale-io/shale", Version: "v1.2.0", GoVersion: "go1.26.0", Revision: "0123456789abcdef0123",
		Time: "2026-12-05T07:00:00Z", Modified: true, Platform: "linux/amd64", Tags: "shale_invariants"}
	if got != want {
		t.Fatalf("FromBuildInfo = %+v, want %+v", got, want)
	}
	if r := got.ShortRevision(); r != "0123456789ab+dirty" {
		t.Fatalf("ShortRevision = %q", r)
	}
	if got := FromBuildInfo(&debug.BuildInfo{GoVersion: "go1.26"}); got.Version != "unknown" || got.Module != "github.com/shale-io/shale" {
		t.Fatalf("FromBuildInfo(no main module) = %+v", got)
	}
}
