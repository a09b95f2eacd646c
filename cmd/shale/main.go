// Command shale is the Shale broker and its tools: `shale serve` runs a
// node; the other verbs manage and inspect a cluster over the Kafka
// protocol (through package sdk) and the nodes' admin HTTP API (package
// adminapi), or read segment files offline. `shale --help` lists them and
// `shale VERB --help` explains each.
//
// The command tree is spf13/cobra's, as in rpk, kubectl and the NATS
// tooling: GNU-style flags (a boolean is a bare flag, --flag=false turns it
// off), flags anywhere among the arguments, help on every verb and group,
// suggestions for mistyped verbs, and shell completion.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(runIO(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs one command line in-process with an empty stdin and returns
// its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, eofReader{}, stdout, stderr)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// runIO runs one command line and returns its exit code: 0 on success and
// for -h/--help, 2 for a command line that cannot run (unknown verb or
// flag, missing argument, bad value), 1 when the work failed. SIGINT and
// SIGTERM cancel the command's context.
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(cmd, stderr, err)
}

// exitCode reports err on stderr under the command's name and maps it to
// an exit code.
func exitCode(cmd *cobra.Command, stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	name := "shale"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	switch {
	case errors.Is(err, errUsage):
		msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
		fmt.Fprintf(stderr, "%s: %s\nusage: %s\nrun '%s --help' for more\n", name, msg, cmd.UseLine(), name)
		return 2
	case errors.Is(err, errServe):
		return 1 // the node logged why
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}

// newRootCmd builds the whole command tree; each call returns a new one
// (flags hold their values), so that tests can run many command lines.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "shale",
		Short: "Shale: a Kafka-protocol broker with tiered storage",
		Long: `Shale: a Kafka-protocol broker with tiered storage.

Client verbs connect to --bootstrap HOST:PORT (env SHALE_BOOTSTRAP, default
127.0.0.1:9092); status verbs ask a node's admin HTTP address, --admin HOST:PORT
(env SHALE_ADMIN, default 127.0.0.1:9644). Every verb that prints takes
--output text|json.

Client verbs reach TLS and SASL listeners with Kafka's client properties
(security.protocol, sasl.mechanism, sasl.username, sasl.password,
sasl.jaas.config, ssl.ca.location, ssl.certificate.location,
ssl.key.location, ...): from --command-config FILE (Java properties, as
Kafka's tools; env SHALE_COMMAND_CONFIG) and -X key=value (repeatable, as
kcat and rpk). -X wins over the file; the password may come from
SHALE_SASL_PASSWORD when neither gives one.`,
		Version:                    versionLine(),
		Args:                       cobra.ArbitraryArgs,
		RunE:                       groupRun,
		PersistentPreRun:           warnDeprecated,
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
		SilenceUsage:               true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return fmt.Errorf("%w: %v", errUsage, err)
	})
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(
		newServeCmd(),
		newTopicCmd(),
		newProduceCmd(),
		newConsumeCmd(),
		newGroupCmd(),
		newUserCmd(),
		newTokenCmd(),
		newQuotaCmd(),
		newACLCmd(),
		newTransactionCmd(),
		newProducerCmd(),
		newClusterCmd(),
		newBrokerCmd(),
		newPartitionCmd(),
		newReplicationCmd(),
		newTierCmd(),
		newDoctorCmd(),
		newSegmentCmd(),
		newVersionCmd(),
	)
	return root
}
