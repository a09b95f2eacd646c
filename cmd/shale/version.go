package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/infra/buildinfo"
)

// buildVersion is `shale version`'s output: what runtime/debug knows of
// the binary.
type buildVersion = buildinfo.Info

// versionLine is the one-line version of `shale --version`.
func versionLine() string { return buildinfo.Read().Line() }

func newVersionCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "version", Short: "print the version, VCS revision and Go version of this binary", Args: noArgs}
	output := addOutput(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		v := buildinfo.Read()
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
