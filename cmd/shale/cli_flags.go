package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// errUsage marks a command line the verb cannot run: exit code 2, and the
// verb's usage goes to stderr.
var errUsage = errors.New("usage")

// defaultBootstrap is where client verbs connect unless --bootstrap or
// SHALE_BOOTSTRAP say otherwise.
const defaultBootstrap = "127.0.0.1:9092"

// cliGlobals are the flags every client verb takes.
type cliGlobals struct {
	bootstrap string
	output    string
	timeout   time.Duration
}

// addGlobals registers --bootstrap (default $SHALE_BOOTSTRAP, else
// 127.0.0.1:9092), --output text|json and --timeout on fs.
func addGlobals(fs *flag.FlagSet) *cliGlobals {
	g := &cliGlobals{}
	def := os.Getenv("SHALE_BOOTSTRAP")
	if def == "" {
		def = defaultBootstrap
	}
	fs.StringVar(&g.bootstrap, "bootstrap", def, "comma-separated Kafka addresses of nodes (env SHALE_BOOTSTRAP)")
	fs.StringVar(&g.output, "output", "text", "text or json")
	fs.DurationVar(&g.timeout, "timeout", 15*time.Second, "how long to wait for each request to the cluster")
	return g
}

// json reports whether --output json was asked for.
func (g *cliGlobals) json() bool { return g.output == "json" }

func (g *cliGlobals) validate() error {
	if g.output != "text" && g.output != "json" {
		return fmt.Errorf("%w: --output must be text or json, not %q", errUsage, g.output)
	}
	if strings.TrimSpace(g.bootstrap) == "" {
		return fmt.Errorf("%w: --bootstrap is empty", errUsage)
	}
	return nil
}

// client returns a franz-go client for the bootstrap nodes; the caller closes
// it.
func (g *cliGlobals) client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(strings.Split(g.bootstrap, ",")...), kgo.ClientID("shale-cli")}
	return kgo.NewClient(append(base, opts...)...)
}

// admin returns an admin client on a new franz-go client; the caller closes
// it (closing the admin client closes the franz-go client).
func (g *cliGlobals) admin() (*kadm.Client, error) {
	cl, err := g.client()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(g.timeout.Milliseconds()))
	return adm, nil
}

// adminSession opens an admin client and a context bounded by --timeout,
// as every admin verb needs; done closes both.
func (g *cliGlobals) adminSession() (*kadm.Client, context.Context, func(), error) {
	adm, err := g.admin()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	return adm, ctx, func() { cancel(); adm.Close() }, nil
}

// parseInterspersed parses flags anywhere among the positional arguments (as
// rpk and kcat allow: `shale produce events --header a=b`) and returns the
// positional ones in order. "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err // the usage is printed: exit 0
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse consumed "--" if it stopped there.
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// splitKV splits "name=value"; the value may contain '='.
func splitKV(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", fmt.Errorf("%w: %q is not name=value", errUsage, s)
	}
	return k, v, nil
}

// newFlagSet returns a flag set whose usage line is usageLine and whose
// errors go to stderr.
func newFlagSet(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// exitCode reports err on stderr under the verb's name and maps it to an
// exit code: 0 for nil, 2 for errUsage (with usageLine), 1 otherwise.
func exitCode(stderr io.Writer, verb, usageLine string, err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "%s: %v\nusage: %s\n", verb, err, usageLine)
		return 2
	default:
		fmt.Fprintf(stderr, "%s: %v\n", verb, err)
		return 1
	}
}
