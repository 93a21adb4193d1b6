package ctl

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// newAuthCommand is `kobectl auth can-i` and `kobectl auth whoami`, as
// kubectl's: questions to the API server's authenticator and authorizer.
func newAuthCommand(o *Options) *cobra.Command {
	auth := &cobra.Command{Use: "auth", Short: "Ask who you are and what you may do"}
	var all, quiet bool
	var sub string
	canI := &cobra.Command{
		Use:   "can-i VERB (TYPE | TYPE/NAME | NONRESOURCEURL) [NAME]",
		Short: "Check whether an action is allowed (prints yes or no; exit status 0 or 1)",
		Long: "Check whether an action is allowed, as kubectl auth can-i: the API server's authorizer answers a SelfSubjectAccessReview.\n\n" +
			"Examples:\n  kobectl auth can-i create deployments -n shop\n  kobectl auth can-i get secrets/db\n  kobectl auth can-i create pods --subresource exec\n  kobectl auth can-i list pods --as alice\n  kobectl auth can-i get /version",
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			verb := args[0]
			q := client.AccessQuestion{Verb: verb, Subresource: sub}
			path := ""
			if strings.HasPrefix(args[1], "/") {
				path = args[1]
			} else {
				typ, name, _ := strings.Cut(args[1], "/")
				if len(args) == 3 {
					name = args[2]
				}
				if typ == "*" {
					q.Group, q.Resource = "*", "*"
				} else {
					k, err := scheme.Lookup(typ)
					if err != nil {
						return err
					}
					q.Group, q.Resource, q.Version = k.Group(), k.Resource, "v1"
					if k.Namespaced && !all {
						q.Namespace = o.namespaceFor(k, false)
					}
				}
				q.Name = name
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := ctxFor(cmd)
			defer cancel()
			st, err := c.CanI(ctx, q, path)
			if err != nil {
				return err
			}
			if st.Allowed {
				if !quiet {
					fmt.Fprintln(o.Out, "yes")
				}
				return nil
			}
			if !quiet {
				fmt.Fprintln(o.Out, "no")
				if st.Reason != "" {
					fmt.Fprintf(o.ErrOut, "%s\n", st.Reason)
				}
			}
			return exitError{code: 1, quiet: true}
		},
	}
	canI.Flags().BoolVarP(&all, "all-namespaces", "A", false, "ask about every namespace (cluster-wide)")
	canI.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing; only the exit status answers")
	canI.Flags().StringVar(&sub, "subresource", "", "a subresource, such as exec, log or status")
	whoami := &cobra.Command{
		Use:   "whoami",
		Short: "Print the user and groups the API server sees you as",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := ctxFor(cmd)
			defer cancel()
			u, err := c.WhoAmI(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "ATTRIBUTE\tVALUE")
			fmt.Fprintf(tw, "Username\t%s\n", u.Username)
			fmt.Fprintf(tw, "Groups\t[%s]\n", strings.Join(u.Groups, " "))
			return tw.Flush()
		},
	}
	auth.AddCommand(canI, whoami)
	return auth
}
