package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/sdk"
)

func newACLCmd() *cobra.Command {
	return newGroup("acl", "ACLs of the authorizer (authorizer: standard): add, list, remove",
		newACLAddCmd(), newACLListCmd(), newACLRemoveCmd())
}

// aclFlags are the resource and binding flags the acl verbs share, with
// kafka-acls' meanings.
type aclFlags struct {
	topic, group, txnID string
	cluster             bool
	pattern             string
	principal, host     string
	operations          []string
}

func addACLFlags(cmd *cobra.Command, patternDefault, patternHelp string) *aclFlags {
	f := &aclFlags{}
	fs := cmd.Flags()
	fs.StringVar(&f.topic, "topic", "", "the topic (or, with --resource-pattern-type prefixed, topic prefix); * is every topic")
	fs.StringVar(&f.group, "group", "", "the consumer group (or prefix); * is every group")
	fs.StringVar(&f.txnID, "transactional-id", "", "the transactional id (or prefix); * is every one")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource (kafka-cluster)")
	fs.StringVar(&f.pattern, "resource-pattern-type", patternDefault, patternHelp)
	fs.StringVar(&f.principal, "principal", "", "the principal, User:NAME (User:* is every user)")
	fs.StringVar(&f.host, "host", "", "the client IP address the ACL is for (* is every host)")
	fs.StringSliceVar(&f.operations, "operation", nil, "operations, comma-separated or repeated: Read, Write, Create, Delete, Alter, "+
		"Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All")
	return f
}

// resource returns the resource the flags name ("" type: none named).
func (f *aclFlags) resource() (typ, name string, err error) {
	var n int
	for _, r := range []struct {
		set       bool
		typ, name string
	}{{f.topic != "", "TOPIC", f.topic}, {f.group != "", "GROUP", f.group},
		{f.txnID != "", "TRANSACTIONAL_ID", f.txnID}, {f.cluster, "CLUSTER", "kafka-cluster"}} {
		if r.set {
			n++
			typ, name = r.typ, r.name
		}
	}
	if n > 1 {
		return "", "", fmt.Errorf("%w: name one of --topic, --group, --transactional-id, --cluster", errUsage)
	}
	return typ, name, nil
}

func newACLAddCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "add", Short: "add ACLs (CreateAcls)",
		Long: "Adds an ALLOW (or, with --deny, a DENY) ACL for --principal to do each --operation on one resource. " +
			"A DENY wins over every ALLOW. Needs Alter on the cluster.",
		Example: "shale acl add --principal User:alice --operation Read,Write --topic payments\n" +
			"shale acl add --principal User:alice --operation Read --group app- --resource-pattern-type prefixed\n" +
			"shale acl add --principal User:* --operation Write --topic audit --deny\n" +
			"shale acl add --principal User:bob --operation Read --topic payments --bootstrap kafka-0.example.com:9094 -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512 -X sasl.username=admin -X ssl.ca.location=ca.crt",
		Args: noArgs}
	g := addGlobals(cmd)
	f := addACLFlags(cmd, "literal", "literal (the name, or * for all) or prefixed")
	deny := cmd.Flags().Bool("deny", false, "a DENY ACL instead of ALLOW")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		typ, name, err := f.resource()
		if err != nil {
			return err
		}
		if typ == "" || f.principal == "" || len(f.operations) == 0 {
			return fmt.Errorf("%w: add needs a resource (--topic, --group, --transactional-id or --cluster), --principal and --operation", errUsage)
		}
		perm := "ALLOW"
		if *deny {
			perm = "DENY"
		}
		host := f.host
		if host == "" {
			host = "*"
		}
		var acls []sdk.ACL
		for _, op := range f.operations {
			acls = append(acls, sdk.ACL{ResourceType: typ, ResourceName: name, PatternType: f.pattern,
				Principal: f.principal, Host: host, Operation: op, Permission: perm})
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			if err := a.CreateACLs(ctx, acls); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added %d ACL(s) for %s on %s %s (%s)\n", len(acls), f.principal,
				strings.ToLower(typ), name, strings.ToLower(f.pattern))
			return nil
		})
	}
	return cmd
}

// filter is the ACLFilter the flags select; permission "" is any.
func (f *aclFlags) filter(permission string) (sdk.ACLFilter, []string, error) {
	typ, name, err := f.resource()
	if err != nil {
		return sdk.ACLFilter{}, nil, err
	}
	ops := f.operations
	if len(ops) == 0 {
		ops = []string{""}
	}
	return sdk.ACLFilter{ResourceType: typ, ResourceName: name, PatternType: f.pattern, Principal: f.principal,
		Host: f.host, Permission: permission}, ops, nil
}

func newACLListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "list ACLs (DescribeAcls)",
		Long: "Lists the ACLs the flags select; no flag lists every ACL. With --resource-pattern-type match and a " +
			"resource, lists every ACL that applies to it (its literal name, *, and its prefixes). Needs Describe on the cluster.",
		Example: "shale acl list\nshale acl list --topic payments-eu --resource-pattern-type match\nshale acl list --principal User:alice",
		Args:    noArgs}
	g := addGlobals(cmd)
	f := addACLFlags(cmd, "any", "any, match, literal or prefixed")
	perm := cmd.Flags().String("permission", "", "allow or deny (default both)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		filter, ops, err := f.filter(*perm)
		if err != nil {
			return err
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			acls := []sdk.ACL{}
			for _, op := range ops {
				filter.Operation = op
				got, err := a.ListACLs(ctx, filter)
				if err != nil {
					return err
				}
				acls = append(acls, got...)
			}
			return printACLs(cmd, g, acls)
		})
	}
	return cmd
}

func newACLRemoveCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "remove", Aliases: []string{"rm"}, Short: "remove ACLs (DeleteAcls)",
		Long: "Removes every ACL the flags select and lists them. It needs a resource or a --principal, " +
			"so that no typo removes every ACL; --all removes every ACL. Needs Alter on the cluster.",
		Example: "shale acl remove --principal User:alice --topic payments\nshale acl remove --principal User:alice --operation Write --topic payments",
		Args:    noArgs}
	g := addGlobals(cmd)
	f := addACLFlags(cmd, "literal", "any, match, literal or prefixed")
	perm := cmd.Flags().String("permission", "", "allow or deny (default both)")
	all := cmd.Flags().Bool("all", false, "remove every ACL the other flags select, even without a resource or principal")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		filter, ops, err := f.filter(*perm)
		if err != nil {
			return err
		}
		if filter.ResourceType == "" && filter.Principal == "" && !*all {
			return fmt.Errorf("%w: remove needs a resource or --principal (or --all)", errUsage)
		}
		if filter.ResourceType == "" && !cmd.Flags().Changed("resource-pattern-type") {
			filter.PatternType = "any"
		}
		return withAdmin(cmd.Context(), g, func(ctx context.Context, a *sdk.Admin) error {
			acls := []sdk.ACL{}
			for _, op := range ops {
				filter.Operation = op
				got, err := a.DeleteACLs(ctx, filter)
				acls = append(acls, got...)
				if err != nil {
					return err
				}
			}
			return printACLs(cmd, g, acls)
		})
	}
	return cmd
}

func printACLs(cmd *cobra.Command, g *cliGlobals, acls []sdk.ACL) error {
	if g.json() {
		return writeJSON(cmd.OutOrStdout(), acls)
	}
	t := newTable(cmd.OutOrStdout(), "PRINCIPAL", "HOST", "OPERATION", "PERMISSION", "RESOURCE", "PATTERN", "NAME")
	for _, a := range acls {
		t.row(a.Principal, a.Host, a.Operation, a.Permission, a.ResourceType, a.PatternType, a.ResourceName)
	}
	return t.flush()
}
