package main

import (
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildVersion is `shale version`'s output: what runtime/debug knows of
// the binary.
type buildVersion struct {
	Module    string `json:"module"`
	Version   string `json:"version"`              // the module version, "(devel)" for a local build
	GoVersion string `json:"go_version"`           // the toolchain that built it
	Revision  string `json:"revision,omitempty"`   // VCS commit, when built with VCS stamping
	Time      string `json:"time,omitempty"`       // VCS commit time
	Modified  bool   `json:"modified,omitempty"`   // built from a tree with uncommitted changes
	Platform  string `json:"platform,omitempty"`   // GOOS/GOARCH
	Tags      string `json:"build_tags,omitempty"` // -tags
}

func readBuildVersion() buildVersion {
	v := buildVersion{Module: "github.com/shale-io/shale", Version: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.GoVersion = bi.GoVersion
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

// versionLine is the one-line version of `shale --version`.
func versionLine() string { return formatVersionLine(readBuildVersion()) }

// formatVersionLine is "shale VERSION [REVISION[+dirty]] GO". The revision
// is left out when the version already names it, as the go command's
// pseudo-versions of a VCS build do (v0.0.0-<time>-<rev12>[+dirty]).
func formatVersionLine(v buildVersion) string {
	s := "shale " + v.Version
	if v.Revision != "" {
		rev := v.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if !strings.Contains(v.Version, rev) {
			s += " " + rev
			if v.Modified {
				s += "+dirty"
			}
		}
	}
	return s + " " + v.GoVersion
}

func newVersionCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "version", Short: "print the version, VCS revision and Go version of this binary", Args: noArgs}
	output := addOutput(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v := readBuildVersion()
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), v)
		}
		printBuildVersion(cmd.OutOrStdout(), v)
		return nil
	}
	return cmd
}

func printBuildVersion(w io.Writer, v buildVersion) {
	t := newTable(w, "MODULE", v.Module)
	t.row("VERSION", v.Version)
	t.row("GO", v.GoVersion)
	if v.Platform != "" {
		t.row("PLATFORM", v.Platform)
	}
	if v.Tags != "" {
		t.row("BUILD-TAGS", v.Tags)
	}
	rev := "unknown (built without VCS stamping, e.g. -buildvcs=false)"
	if v.Revision != "" {
		rev = v.Revision
		if v.Modified {
			rev += " (modified)"
		}
	}
	t.row("REVISION", rev)
	if v.Time != "" {
		t.row("COMMIT-TIME", v.Time)
	}
	t.flush()
}
