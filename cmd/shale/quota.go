package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/sdk"
)

func newQuotaCmd() *cobra.Command {
	return newGroup("quota", "client quotas of users and client ids: set, delete, list",
		newQuotaSetCmd(), newQuotaDeleteCmd(), newQuotaListCmd())
}

// quotaEntityFlags are the entity flags of `shale quota set|delete`, as
// kafka-configs' --entity-type users|clients, --entity-name and
// --entity-default.
type quotaEntityFlags struct {
	user, clientID               string
	userDefault, clientIDDefault bool
}

func addQuotaEntityFlags(cmd *cobra.Command) *quotaEntityFlags {
	f := &quotaEntityFlags{}
	cmd.Flags().StringVar(&f.user, "user", "", "the user (a principal's name: alice for User:alice)")
	cmd.Flags().BoolVar(&f.userDefault, "user-default", false, "the default user (<default>): every user without a quota of its own")
	cmd.Flags().StringVar(&f.clientID, "client-id", "", "the client id")
	cmd.Flags().BoolVar(&f.clientIDDefault, "client-id-default", false, "the default client id (<default>)")
	return f
}

func (f *quotaEntityFlags) entity(cmd *cobra.Command) (sdk.QuotaEntity, error) {
	var e sdk.QuotaEntity
	if cmd.Flags().Changed("user") {
		e.User = &f.user
	}
	if cmd.Flags().Changed("client-id") {
		e.ClientID = &f.clientID
	}
	e.DefaultUser, e.DefaultClientID = f.userDefault, f.clientIDDefault
	switch {
	case e.User != nil && e.DefaultUser:
		return e, usagef("--user and --user-default exclude each other")
	case e.ClientID != nil && e.DefaultClientID:
		return e, usagef("--client-id and --client-id-default exclude each other")
	case e.User == nil && !e.DefaultUser && e.ClientID == nil && !e.DefaultClientID:
		return e, usagef("name an entity: --user, --user-default, --client-id or --client-id-default")
	}
	return e, nil
}

const quotaKeysHelp = "Keys: producer_byte_rate and consumer_byte_rate (bytes per second), request_percentage " +
	"(percent of one request handler's time) and shale.remote_fetch_byte_rate (bytes per second read from " +
	"remote segments)."

func newQuotaSetCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "set KEY=VALUE...", Short: "set quotas of a user, a client id or both",
		Long: "Sets the quotas of the entity the flags name (AlterClientQuotas), leaving its other quotas as they are. " +
			quotaKeysHelp + " The most specific entity with a quota applies: user and client id, then user, " +
			"then client id, defaults after names.",
		Example: "shale quota set --user alice producer_byte_rate=1048576 consumer_byte_rate=2097152\n" +
			"shale quota set --user-default --client-id-default request_percentage=50",
		Args: minArgs(1, "give at least one KEY=VALUE")}
	g := addGlobals(cmd)
	ef := addQuotaEntityFlags(cmd)
	validateOnly := cmd.Flags().Bool("validate-only", false, "have the broker check the change without making it")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		e, err := ef.entity(cmd)
		if err != nil {
			return err
		}
		values := map[string]float64{}
		for _, a := range args {
			k, v, err := splitKV(a)
			if err != nil {
				return err
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return usagef("%s: %q is not a number", k, v)
			}
			values[k] = f
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			if err := a.SetQuotas(ctx, e, values, *validateOnly); err != nil {
				return err
			}
			verb := "set"
			if *validateOnly {
				verb = "valid, not set"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "quota %s: %s\n", e, verb)
			return nil
		})
	}
	return cmd
}

func newQuotaDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete [KEY...]", Short: "delete quotas of a user, a client id or both",
		Long:    "Removes the given quota keys of the entity the flags name, or all of its quotas when no key is given. " + quotaKeysHelp,
		Example: "shale quota delete --user alice producer_byte_rate\nshale quota delete --client-id-default"}
	g := addGlobals(cmd)
	ef := addQuotaEntityFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		e, err := ef.entity(cmd)
		if err != nil {
			return err
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			if err := a.DeleteQuotas(ctx, e, args); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "quota %s: deleted\n", e)
			return nil
		})
	}
	return cmd
}

func newQuotaListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "list the client quotas", Args: noArgs}
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			quotas, err := a.ListQuotas(ctx)
			if err != nil {
				return err
			}
			if g.json() {
				return writeJSON(cmd.OutOrStdout(), quotas)
			}
			t := newTable(cmd.OutOrStdout(), "ENTITY", "KEY", "VALUE")
			for _, q := range quotas {
				keys := make([]string, 0, len(q.Values))
				for k := range q.Values {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					t.row(q.Entity.String(), k, strconv.FormatFloat(q.Values[k], 'f', -1, 64))
				}
			}
			return t.flush()
		})
	}
	return cmd
}
