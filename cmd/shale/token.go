package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/sdk"
)

// newTokenCmd is kafka-delegation-tokens.sh's verbs: delegation tokens
// (KIP-48) for logins with SCRAM and tokenauth=true.
func newTokenCmd() *cobra.Command {
	return newGroup("token", "delegation tokens (kafka-delegation-tokens): create, renew, expire, describe",
		newTokenCreateCmd(), newTokenRenewCmd(), newTokenExpireCmd(), newTokenDescribeCmd())
}

func writeTokens(cmd *cobra.Command, g *cliGlobals, ts []sdk.DelegationToken) error {
	if ts == nil {
		ts = []sdk.DelegationToken{}
	}
	if g.json() {
		return writeJSON(cmd.OutOrStdout(), ts)
	}
	t := newTable(cmd.OutOrStdout(), "TOKEN-ID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUED", "EXPIRES", "MAX-EXPIRY")
	for _, d := range ts {
		t.row(d.TokenID, d.HMAC, d.Owner, d.Requester, strings.Join(d.Renewers, ","), d.Issued.UTC().Format(time.RFC3339),
			d.Expires.UTC().Format(time.RFC3339), d.MaxExpiry.UTC().Format(time.RFC3339))
	}
	return t.flush()
}

func newTokenCreateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "create", Short: "create a delegation token",
		Long: "Creates a delegation token (CreateDelegationToken) and prints its id and HMAC: a client logs in with SCRAM, " +
			"the token id as user name, the HMAC as password, and tokenauth=true. Ask over a SASL or certificate login, not a token.",
		Example: "shale token create --renewer User:bob --max-life-time 24h --bootstrap kafka-0:9094 --command-config alice.properties",
		Args:    noArgs}
	g := addGlobals(cmd)
	owner := cmd.Flags().String("owner", "", "principal that owns the token (User:NAME); default the caller (needs CreateTokens on that user)")
	renewers := cmd.Flags().StringSlice("renewer", nil, "principal (User:NAME) that may renew the token (repeatable)")
	life := cmd.Flags().Duration("max-life-time", 0, "the token's maximum lifetime; 0 is the cluster's delegation_token_max_lifetime")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			t, err := a.CreateDelegationToken(ctx, *owner, *renewers, *life)
			if err != nil {
				return err
			}
			return writeTokens(cmd, g, []sdk.DelegationToken{t})
		})
	}
	return cmd
}

func newTokenRenewCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "renew HMAC", Short: "renew a delegation token",
		Example: "shale token renew 'QmFzZTY0...' --renew-time-period 12h", Args: exactArgs(1, "name the token's HMAC")}
	g := addGlobals(cmd)
	period := cmd.Flags().Duration("renew-time-period", 0, "how long from now; 0 is the cluster's delegation_token_expiry_time")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			exp, err := a.RenewDelegationToken(ctx, args[0], *period)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token renewed: expires %s\n", exp.UTC().Format(time.RFC3339))
			return nil
		})
	}
	return cmd
}

func newTokenExpireCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "expire HMAC", Short: "expire a delegation token (at once by default)",
		Example: "shale token expire 'QmFzZTY0...'", Args: exactArgs(1, "name the token's HMAC")}
	g := addGlobals(cmd)
	period := cmd.Flags().Duration("expiry-time-period", -time.Millisecond, "expire this long from now; negative removes the token at once")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			exp, err := a.ExpireDelegationToken(ctx, args[0], *period)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token expires %s\n", exp.UTC().Format(time.RFC3339))
			return nil
		})
	}
	return cmd
}

func newTokenDescribeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "describe", Short: "list the delegation tokens the caller may see",
		Example: "shale token describe --owner User:alice", Args: noArgs}
	g := addGlobals(cmd)
	owners := cmd.Flags().StringSlice("owner", nil, "only the tokens of this principal (User:NAME; repeatable)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			ts, err := a.DescribeDelegationTokens(ctx, *owners...)
			if err != nil {
				return err
			}
			return writeTokens(cmd, g, ts)
		})
	}
	return cmd
}
