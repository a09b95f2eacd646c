package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/sdk"
)

// errUsage marks a command line the verb cannot run: exit code 2, and the
// verb's usage line goes to stderr.
var errUsage = errors.New("usage")

// usagef is an errUsage with a message.
func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

const (
	// defaultBootstrap is where client verbs connect unless --bootstrap or
	// SHALE_BOOTSTRAP say otherwise.
	defaultBootstrap = "127.0.0.1:9092"
	// defaultAdmin is the admin HTTP address status verbs ask unless
	// --admin or SHALE_ADMIN say otherwise (shale serve's admin_listen).
	defaultAdmin = "127.0.0.1:9644"
	// defaultTimeout bounds each request to the cluster.
	defaultTimeout = 15 * time.Second
)

// envOr is the environment variable key, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// outputFormat is --output: text (tables, for people) or json (for
// scripts). Any other value is a flag error.
type outputFormat string

func (o *outputFormat) String() string { return string(*o) }
func (o *outputFormat) Type() string   { return "text|json" }
func (o *outputFormat) Set(s string) error {
	if s != "text" && s != "json" {
		return fmt.Errorf("want text or json, not %q", s)
	}
	*o = outputFormat(s)
	return nil
}

// json reports whether --output json was asked for.
func (o *outputFormat) json() bool { return *o == "json" }

// jsonAlias is the old --json of `replication status`, a bare flag that
// means --output json; it is kept hidden.
type jsonAlias struct{ o *outputFormat }

func (j jsonAlias) String() string   { return strconv.FormatBool(j.o.json()) }
func (j jsonAlias) Type() string     { return "bool" }
func (j jsonAlias) IsBoolFlag() bool { return true }
func (j jsonAlias) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*j.o = "text"
	if on {
		*j.o = "json"
	}
	return nil
}

// addOutput registers --output text|json on cmd, with shell completion.
func addOutput(cmd *cobra.Command) *outputFormat {
	o := outputFormat("text")
	cmd.Flags().Var(&o, "output", "output format: text or json")
	cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return &o
}

// aliasOf is the annotation of a hidden old spelling: the new one.
const aliasOf = "shale-alias-of"

// hiddenAlias registers old as a hidden spelling of the flag new whose
// value is v (they share it); using it prints a deprecation notice on
// stderr (warnDeprecated). pflag's MarkDeprecated is not used: cobra
// prints its notice on stdout, into the JSON a script reads.
func hiddenAlias(fs *pflag.FlagSet, v pflag.Value, old, new string) {
	f := fs.VarPF(v, old, "", "same as --"+new)
	if _, ok := v.(interface{ IsBoolFlag() bool }); ok {
		f.NoOptDefVal = "true"
	}
	f.Hidden = true
	f.Annotations = map[string][]string{aliasOf: {new}}
}

// warnDeprecated is the root's PersistentPreRun: a notice on stderr for
// each old flag spelling on the command line.
func warnDeprecated(cmd *cobra.Command, _ []string) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if n := f.Annotations[aliasOf]; len(n) > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: --%s is deprecated, use --%s\n", cmd.CommandPath(), f.Name, n[0])
		}
	})
}

// cliGlobals are the flags every Kafka client verb takes.
type cliGlobals struct {
	bootstrap string
	output    *outputFormat
	timeout   time.Duration
	security  *clientSecurity
}

// addGlobals registers --bootstrap (default $SHALE_BOOTSTRAP, else
// 127.0.0.1:9092), --output text|json, --timeout, and --command-config and
// -X for TLS and SASL (clientSecurity) on cmd.
func addGlobals(cmd *cobra.Command) *cliGlobals {
	g := &cliGlobals{output: addOutput(cmd), security: addClientSecurity(cmd)}
	cmd.Flags().StringVar(&g.bootstrap, "bootstrap", envOr("SHALE_BOOTSTRAP", defaultBootstrap), "comma-separated Kafka addresses of nodes (env SHALE_BOOTSTRAP)")
	cmd.Flags().DurationVar(&g.timeout, "timeout", defaultTimeout, "how long to wait for each request to the cluster")
	return g
}

// json reports whether --output json was asked for.
func (g *cliGlobals) json() bool { return g.output.json() }

func (g *cliGlobals) seeds() ([]string, error) {
	var out []string
	for _, s := range strings.Split(g.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, usagef("--bootstrap is empty")
	}
	return out, nil
}

// sdkOptions are the SDK options of every client verb: the bootstrap
// nodes, the client id, TLS and SASL; extra come after them.
func (g *cliGlobals) sdkOptions(extra ...sdk.Option) ([]sdk.Option, error) {
	seeds, err := g.seeds()
	if err != nil {
		return nil, err
	}
	sec, err := g.security.options()
	if err != nil {
		return nil, err
	}
	opts := append([]sdk.Option{sdk.WithSeeds(seeds...), sdk.WithClientID("shale-cli")}, sec...)
	return append(opts, extra...), nil
}

// admin opens an SDK admin client and a context bounded by --timeout, as
// every admin verb needs; done closes both. What the SDK does not wrap
// goes through its franz-go admin client, Kadm.
func (g *cliGlobals) admin(ctx context.Context) (*sdk.Admin, context.Context, func(), error) {
	opts, err := g.sdkOptions()
	if err != nil {
		return nil, nil, nil, err
	}
	a, err := sdk.NewAdmin(opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	return a, ctx, func() { cancel(); a.Close() }, nil
}

// parsePosition reads a --offset, --until or --to value; text that is no
// position is a usage error.
func parsePosition(s string) (sdk.Position, error) {
	p, err := sdk.ParsePosition(s)
	if err != nil {
		return p, fmt.Errorf("%w: %w", errUsage, err)
	}
	return p, nil
}

// parsePartitions reads "0,2,5" (empty means all).
func parsePartitions(s string) ([]int32, error) {
	if s == "" {
		return nil, nil
	}
	var out []int32
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 0 {
			return nil, usagef("partition %q", f)
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// errUnknownTopic is returned when a named topic does not exist.
var errUnknownTopic = errors.New("unknown topic")

// topicNotFound words the SDK's ErrTopicNotFound as the CLI's "unknown
// topic"; other errors pass unchanged.
func topicNotFound(topic string, err error) error {
	if errors.Is(err, sdk.ErrTopicNotFound) || errors.Is(err, sdk.ErrPartitionNotFound) {
		return fmt.Errorf("%w %q: %w", errUnknownTopic, topic, err)
	}
	return err
}

// adminAddrs is --admin: admin HTTP addresses of nodes (host:port or a
// URL), repeatable or comma-separated.
type adminAddrs struct {
	addrs []string
	set   bool // given on the command line: the default is dropped
	// The admin listener's TLS and authentication, as the node's
	// admin_ssl_* and admin_auth_tokens_file ask.
	tokenFile, ca, cert, key string
}

func (a *adminAddrs) String() string { return strings.Join(a.addrs, ",") }
func (a *adminAddrs) Type() string   { return "addr" }
func (a *adminAddrs) Set(s string) error {
	if !a.set {
		a.addrs, a.set = nil, true
	}
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			a.addrs = append(a.addrs, x)
		}
	}
	return nil
}

// addAdmin registers --admin (default $SHALE_ADMIN, else 127.0.0.1:9644)
// and its old spelling --node, hidden.
func addAdmin(cmd *cobra.Command, usage string) *adminAddrs {
	a := &adminAddrs{}
	a.Set(envOr("SHALE_ADMIN", defaultAdmin))
	a.set = false
	cmd.Flags().Var(a, "admin", usage+" (env SHALE_ADMIN)")
	hiddenAlias(cmd.Flags(), a, "node", "admin")
	cmd.Flags().StringVar(&a.tokenFile, "admin-token-file", os.Getenv("SHALE_ADMIN_TOKEN_FILE"),
		"file whose first line is a bearer token for the admin listener; a role after it, as in the node's tokens file, is ignored (env SHALE_ADMIN_TOKEN_FILE)")
	cmd.Flags().StringVar(&a.ca, "admin-ca", os.Getenv("SHALE_ADMIN_CA"),
		"PEM CA of the admin listener's HTTPS certificate; addresses without a scheme become https:// (env SHALE_ADMIN_CA)")
	cmd.Flags().StringVar(&a.cert, "admin-cert", os.Getenv("SHALE_ADMIN_CERT"), "PEM client certificate for the admin listener (env SHALE_ADMIN_CERT)")
	cmd.Flags().StringVar(&a.key, "admin-key", os.Getenv("SHALE_ADMIN_KEY"), "PEM key of --admin-cert (env SHALE_ADMIN_KEY)")
	return a
}

// client returns the admin HTTP client the flags ask for, and the
// addresses to ask: with --admin-ca or --admin-cert, a host:port is
// https://host:port.
func (a *adminAddrs) client(timeout time.Duration) (adminapi.Client, []string, error) {
	c := adminapi.Client{Timeout: timeout}
	if a.tokenFile != "" {
		data, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return c, nil, usagef("--admin-token-file: %v", err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				// A role after the token, as in the node's tokens file
				// (adminauth), is the node's business.
				c.Token = strings.Fields(line)[0]
				break
			}
		}
		if c.Token == "" {
			return c, nil, usagef("--admin-token-file %s holds no token", a.tokenFile)
		}
	}
	addrs := a.addrs
	if a.ca != "" || a.cert != "" {
		tc, err := adminapi.TLSConfig(a.ca, a.cert, a.key)
		if err != nil {
			return c, nil, usagef("admin TLS: %v", err)
		}
		c.HTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		addrs = make([]string, len(a.addrs))
		for i, x := range a.addrs {
			if !strings.Contains(x, "://") {
				x = "https://" + x
			}
			addrs[i] = x
		}
	}
	return c, addrs, nil
}

// splitKV splits "name=value"; the value may contain '='.
func splitKV(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", usagef("%q is not name=value", s)
	}
	return k, v, nil
}

// Positional argument checks, as errUsage so that they exit 2.

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected %q", args[0])
	}
	return nil
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s", what)
		}
		return nil
	}
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s", what)
		}
		return nil
	}
}

// newGroup returns a verb group such as `shale topic`: without a verb, or
// with an unknown one, it is a usage error (with suggestions); -h prints
// its help.
func newGroup(use, short string, verbs ...*cobra.Command) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: groupRun, SuggestionsMinimumDistance: 2}
	g.AddCommand(verbs...)
	return g
}

func groupRun(cmd *cobra.Command, args []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(args) == 0 {
		return usagef("name a verb: %s", strings.Join(names, ", "))
	}
	msg := fmt.Sprintf("unknown verb %q (verbs: %s)", args[0], strings.Join(names, ", "))
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s", msg)
}

// completionTimeout bounds the cluster look-ups of shell completion: a
// shell waits for them on every TAB.
const completionTimeout = 2 * time.Second

// completeTopics completes a TOPIC argument (or --topic) with the
// cluster's topic names, asked of --bootstrap.
func completeTopics(g *cliGlobals) cobra.CompletionFunc {
	return completeNames(g, func(ctx context.Context, a *sdk.Admin) ([]string, error) { return a.ListTopics(ctx) })
}

// completeGroups completes a GROUP argument with the cluster's groups.
func completeGroups(g *cliGlobals) cobra.CompletionFunc {
	return completeNames(g, func(ctx context.Context, a *sdk.Admin) ([]string, error) { return a.ListGroups(ctx) })
}

func completeNames(g *cliGlobals, list func(context.Context, *sdk.Admin) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		a, ctx, done, err := g.admin(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		ctx, cancel := context.WithTimeout(ctx, completionTimeout)
		defer cancel()
		names, err := list(ctx, a)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// onlyFirst completes the first positional argument with f and leaves the
// others to the shell (files), as for `shale produce TOPIC FILE...`.
func onlyFirst(f cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return f(cmd, args, prefix)
	}
}
