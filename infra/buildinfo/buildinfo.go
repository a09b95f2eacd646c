// Package buildinfo reads what the Go toolchain stamped into the running
// binary (runtime/debug.ReadBuildInfo): the module version, the VCS revision
// and the Go version. `shale version` prints it, the node logs it at start
// and exports it as the shale_build_info series.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Info is what runtime/debug knows of the binary.
type Info struct {
	Module    string `json:"module"`
	Version   string `json:"version"`              // the module version, "(devel)" for a local build
	GoVersion string `json:"go_version"`           // the toolchain that built it
	Revision  string `json:"revision,omitempty"`   // VCS commit, when built with VCS stamping
	Time      string `json:"time,omitempty"`       // VCS commit time
	Modified  bool   `json:"modified,omitempty"`   // built from a tree with uncommitted changes
	Platform  string `json:"platform,omitempty"`   // GOOS/GOARCH
	Tags      string `json:"build_tags,omitempty"` // -tags
}

// Read returns the running binary's Info; Version is "unknown" when the
// binary carries no build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Module: "github.com/shale-io/shale", Version: "unknown"}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo is Read's decoding of bi.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	v := Info{Module: "github.com/shale-io/shale", Version: "unknown", GoVersion: bi.GoVersion}
	if bi.Main.Path != "" {
		v.Module, v.Version = bi.Main.Path, bi.Main.Version
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		case "-tags":
			v.Tags = s.Value
		}
	}
	if goos != "" {
		v.Platform = goos + "/" + goarch
	}
	return v
}

// ShortRevision is the revision's first 12 hex digits with "+dirty" for a
// modified tree, or "" without VCS stamping.
func (v Info) ShortRevision() string {
	if v.Revision == "" {
		return ""
	}
	rev := v.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if v.Modified {
		rev += "+dirty"
	}
	return rev
}

// Line is "shale VERSION [REVISION[+dirty]] GO", the one-line version of
// `shale --version`. The revision is left out when the version already
// names it, as the go command's pseudo-versions of a VCS build do
// (v0.0.0-<time>-<rev12>[+dirty]).
func (v Info) Line() string {
	s := "shale " + v.Version
	if rev := v.ShortRevision(); rev != "" && !strings.Contains(v.Version, strings.TrimSuffix(rev, "+dirty")) {
		s += " " + rev
	}
	return s + " " + v.GoVersion
}
