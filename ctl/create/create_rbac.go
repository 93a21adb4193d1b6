package create

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// kubectl create serviceaccount NAME.
func newCreateServiceAccountCommand(o *cmdutil.Options) *cobra.Command {
	return createNamed(o, "serviceaccount", []string{"sa"}, "Create a ServiceAccount (kubectl create serviceaccount)", func(ctx context.Context, c *client.Client, name string) error {
		_, err := client.For[*core.ServiceAccount](c).Create(ctx, &core.ServiceAccount{ObjectMeta: meta.ObjectMeta{Namespace: o.NamespaceOrDefault(), Name: name}})
		return err
	})
}

// createNamed is a `create KIND NAME` command: create makes the object,
// and kobectl says "KIND/NAME created", as kubectl does.
func createNamed(o *cmdutil.Options, kind string, aliases []string, short string, create func(ctx context.Context, c *client.Client, name string) error) *cobra.Command {
	return &cobra.Command{
		Use:     kind + " NAME",
		Aliases: aliases,
		Short:   short,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			if err := create(ctx, c, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s/%s created\n", kind, args[0])
			return nil
		},
	}
}

// kubectl create token SERVICEACCOUNT: prints a token (a TokenRequest).
func newCreateTokenCommand(o *cmdutil.Options) *cobra.Command {
	var audiences []string
	var duration time.Duration
	var boundKind, boundName string
	cmd := &cobra.Command{
		Use:   "token SERVICEACCOUNT [--audience A] [--duration D] [--bound-object-kind Pod --bound-object-name NAME]",
		Short: "Print a token of a ServiceAccount (kubectl create token)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			spec := authorization.TokenRequestSpec{Audiences: audiences}
			if duration != 0 {
				secs := int64(duration / time.Second)
				spec.ExpirationSeconds = &secs
			}
			if (boundKind == "") != (boundName == "") {
				return errors.New("--bound-object-kind and --bound-object-name go together")
			}
			if boundKind != "" {
				spec.BoundObjectRef = &authorization.BoundObjectReference{Kind: boundKind, APIVersion: "v1", Name: boundName}
			}
			st, err := c.CreateToken(ctx, o.NamespaceOrDefault(), args[0], spec)
			if err != nil {
				return err
			}
			fmt.Fprintln(o.Out, st.Token)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&audiences, "audience", nil, "an audience of the token (default: the API server's)")
	cmd.Flags().DurationVar(&duration, "duration", 0, "how long the token is valid (default 1h; at least 10m)")
	cmd.Flags().StringVar(&boundKind, "bound-object-kind", "", "Pod: the token dies with that pod")
	cmd.Flags().StringVar(&boundName, "bound-object-name", "", "the pod the token is bound to")
	return cmd
}

// kubectl create rolebinding / clusterrolebinding NAME --clusterrole|--role
// R --user U --group G --serviceaccount NS:NAME.
func newCreateBindingCommand(o *cmdutil.Options, cluster bool) *cobra.Command {
	var role, clusterRole string
	var users, groups, accounts []string
	use, kind := "rolebinding", "RoleBinding"
	if cluster {
		use, kind = "clusterrolebinding", "ClusterRoleBinding"
	}
	cmd := &cobra.Command{
		Use:   use + " NAME --clusterrole NAME" + map[bool]string{false: "|--role NAME"}[cluster] + " [--user U] [--group G] [--serviceaccount NAMESPACE:NAME]",
		Short: "Create a " + kind + " granting a role (kubectl create " + use + ")",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: clusterRole}
			switch {
			case role != "" && clusterRole != "":
				return errors.New("give --role or --clusterrole, not both")
			case role != "":
				ref.Kind, ref.Name = "Role", role
			case clusterRole == "":
				return errors.New("--clusterrole (or, for a rolebinding, --role) is required")
			}
			var subjects []rbac.Subject
			for _, u := range users {
				subjects = append(subjects, rbac.Subject{Kind: rbac.UserKind, APIGroup: rbac.GroupName, Name: u})
			}
			for _, g := range groups {
				subjects = append(subjects, rbac.Subject{Kind: rbac.GroupKind, APIGroup: rbac.GroupName, Name: g})
			}
			for _, sa := range accounts {
				ns, name, ok := strings.Cut(sa, ":")
				if !ok || ns == "" || name == "" {
					return fmt.Errorf("--serviceaccount %q: want NAMESPACE:NAME", sa)
				}
				subjects = append(subjects, rbac.Subject{Kind: rbac.ServiceAccountKind, Namespace: ns, Name: name})
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			om := meta.ObjectMeta{Name: args[0]}
			if cluster {
				_, err = client.For[*rbac.ClusterRoleBinding](c).Create(ctx, &rbac.ClusterRoleBinding{ObjectMeta: om, RoleRef: ref, Subjects: subjects})
			} else {
				om.Namespace = o.NamespaceOrDefault()
				_, err = client.For[*rbac.RoleBinding](c).Create(ctx, &rbac.RoleBinding{ObjectMeta: om, RoleRef: ref, Subjects: subjects})
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s.rbac.authorization.k8s.io/%s created\n", use, args[0])
			return nil
		},
	}
	if !cluster {
		cmd.Flags().StringVar(&role, "role", "", "the Role (of this namespace) to grant")
	}
	cmd.Flags().StringVar(&clusterRole, "clusterrole", "", "the ClusterRole to grant")
	cmd.Flags().StringArrayVar(&users, "user", nil, "a user to grant it to (repeatable)")
	cmd.Flags().StringArrayVar(&groups, "group", nil, "a group to grant it to (repeatable)")
	cmd.Flags().StringArrayVar(&accounts, "serviceaccount", nil, "a ServiceAccount NAMESPACE:NAME to grant it to (repeatable)")
	return cmd
}

// Generators are the create subcommands that build one object from flags.
func Generators(o *cmdutil.Options) []*cobra.Command {
	return []*cobra.Command{
		createNamed(o, "namespace", []string{"ns"}, "Create a namespace (kubectl create namespace)", func(ctx context.Context, c *client.Client, name string) error {
			_, err := client.For[*core.Namespace](c).Create(ctx, &core.Namespace{ObjectMeta: meta.ObjectMeta{Name: name}})
			return err
		}),
		newCreateServiceAccountCommand(o), newCreateTokenCommand(o), newCreateBindingCommand(o, false), newCreateBindingCommand(o, true),
		newCreateDeploymentCommand(o), newCreateConfigMapCommand(o), newCreateSecretCommand(o), newCreateServiceCommand(o), newCreateJobCommand(o),
		newCreateQuotaCommand(o), newCreatePDBCommand(o), newCreatePriorityClassCommand(o),
	}
}
