package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/sdk"
)

func newUserCmd() *cobra.Command {
	return newGroup("user", "SCRAM users of the SASL listeners: create, delete, list",
		newUserCreateCmd(), newUserDeleteCmd(), newUserListCmd())
}

func newUserCreateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "create NAME", Short: "create a user's SCRAM credential, or replace it",
		Long: "Creates or replaces NAME's SCRAM credential (AlterUserScramCredentials). The password is read from " +
			"--password-file, or from the first line of standard input; it is salted here and never sent.",
		Example: "shale user create alice --mechanism SCRAM-SHA-512 --password-file alice.pass\n" +
			"shale user create alice --password-file alice.pass --bootstrap kafka-0.example.com:9094 --command-config admin.properties",
		Args: cobra.ExactArgs(1)}
	g := addGlobals(cmd)
	mech := cmd.Flags().String("mechanism", sdk.ScramSHA512, "SCRAM-SHA-256 or SCRAM-SHA-512")
	iters := cmd.Flags().Int32("iterations", 4096, "SCRAM iterations, 4096 to 16384")
	passFile := cmd.Flags().String("password-file", "", "file whose first line is the password (default: standard input)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		pass, err := readPassword(*passFile, cmd.InOrStdin())
		if err != nil {
			return err
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			if err := a.UpsertUser(ctx, args[0], pass, *mech, *iters); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s credential stored\n", args[0], *mech)
			return nil
		})
	}
	return cmd
}

// readPassword returns the first line of path, or of stdin when path is "".
func readPassword(path string, stdin io.Reader) (string, error) {
	r := stdin
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty password")
	}
	return line, nil
}

func newUserDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete NAME", Short: "delete a user's SCRAM credential",
		Example: "shale user delete alice --mechanism SCRAM-SHA-512", Args: cobra.ExactArgs(1)}
	g := addGlobals(cmd)
	mech := cmd.Flags().String("mechanism", sdk.ScramSHA512, "SCRAM-SHA-256 or SCRAM-SHA-512")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			if err := a.DeleteUser(ctx, args[0], *mech); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s credential deleted\n", args[0], *mech)
			return nil
		})
	}
	return cmd
}

func newUserListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "list the users' SCRAM credentials", Args: noArgs}
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			users, err := a.ListUsers(ctx)
			if err != nil {
				return err
			}
			if users == nil {
				users = []sdk.UserCredential{}
			}
			if g.json() {
				return writeJSON(cmd.OutOrStdout(), users)
			}
			t := newTable(cmd.OutOrStdout(), "USER", "MECHANISM", "ITERATIONS")
			for _, u := range users {
				t.row(u.User, u.Mechanism, u.Iterations)
			}
			return t.flush()
		})
	}
	return cmd
}

// withAdmin runs fn with an admin client of the cluster g names.
func withAdmin(ctx context.Context, g *cliGlobals, fn func(context.Context, *sdk.Admin) error) error {
	a, ctx, done, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	return fn(ctx, a)
}
