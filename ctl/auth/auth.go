package auth

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/authorization"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdAuth is `kobectl auth can-i` and `kobectl auth whoami`, as
// kubectl's: questions to the API server's authenticator and authorizer.
func NewCmdAuth(o *cmdutil.Options) *cobra.Command {
	auth := &cobra.Command{Use: "auth", Short: "Ask who you are and what you may do"}
	var all, quiet, list, noHeaders bool
	var sub string
	canI := &cobra.Command{
		Use:   "can-i (VERB (TYPE | TYPE/NAME | NONRESOURCEURL) [NAME] | --list)",
		Short: "Check whether an action is allowed (prints yes or no; exit status 0 or 1)",
		Long: "Check whether an action is allowed, as kubectl auth can-i: the API server's authorizer answers a SelfSubjectAccessReview.\n" +
			"With --list, every rule you hold in the namespace (a SelfSubjectRulesReview).\n\n" +
			"Examples:\n  kobectl auth can-i create deployments -n shop\n  kobectl auth can-i get secrets/db\n  kobectl auth can-i create pods --subresource exec\n  kobectl auth can-i list pods --as alice\n  kobectl auth can-i get /version",
		Args: func(cmd *cobra.Command, args []string) error {
			if list && len(args) > 0 {
				return fmt.Errorf("list option must be specified with no arguments")
			}
			if list {
				return nil
			}
			return cobra.RangeArgs(2, 3)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				c, err := o.Client()
				if err != nil {
					return err
				}
				ctx, cancel := cmdutil.CtxFor(cmd)
				defer cancel()
				st, err := c.RulesIn(ctx, o.NamespaceOrDefault())
				if err != nil {
					return err
				}
				if st.Incomplete {
					fmt.Fprintf(o.ErrOut, "Warning: the list may be incomplete: %s\n", st.EvaluationError)
				}
				return printRules(o, st, noHeaders)
			}
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
					k, err := o.Lookup(typ)
					if err != nil {
						return err
					}
					q.Group, q.Resource, q.Version = k.Group(), k.Resource, "v1"
					if k.Namespaced && !all {
						q.Namespace = o.NamespaceFor(k, false)
					}
				}
				q.Name = name
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
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
			return cmdutil.ExitError{Code: 1, Quiet: true}
		},
	}
	canI.Flags().BoolVarP(&all, "all-namespaces", "A", false, "ask about every namespace (cluster-wide)")
	canI.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing; only the exit status answers")
	canI.Flags().StringVar(&sub, "subresource", "", "a subresource, such as exec, log or status")
	canI.Flags().BoolVar(&list, "list", false, "list every action you may do in the namespace")
	canI.Flags().BoolVar(&noHeaders, "no-headers", false, "with --list: no header line")
	whoami := &cobra.Command{
		Use:   "whoami",
		Short: "Print the user and groups the API server sees you as",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
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

// printRules prints rules as kubectl auth can-i --list does: one line per
// resource (resource.group), path, or named objects, with every verb
// allowed on it, sorted.
func printRules(o *cmdutil.Options, st authorization.SubjectRulesReviewStatus, noHeaders bool) error {
	type line struct {
		resource, url, name string
		verbs               []string
	}
	byKey := map[string]*line{}
	var order []string
	add := func(l line) {
		key := l.resource + "\x00" + l.url + "\x00" + l.name
		if have, ok := byKey[key]; ok {
			for _, v := range l.verbs {
				if !slices.Contains(have.verbs, v) {
					have.verbs = append(have.verbs, v)
				}
			}
			return
		}
		l.verbs = slices.Clone(l.verbs)
		byKey[key] = &l
		order = append(order, key)
	}
	for _, r := range st.NonResourceRules {
		for _, u := range r.NonResourceURLs {
			add(line{url: u, verbs: r.Verbs})
		}
	}
	for _, r := range st.ResourceRules {
		groups := r.APIGroups
		if len(groups) == 0 {
			groups = []string{""}
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range groups {
			for _, res := range r.Resources {
				if g != "" {
					res += "." + g
				}
				for _, n := range names {
					add(line{resource: res, name: n, verbs: r.Verbs})
				}
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool { // resources first, then paths
		a, b := byKey[order[i]], byKey[order[j]]
		if (a.url == "") != (b.url == "") {
			return a.url == ""
		}
		return order[i] < order[j]
	})
	tw := tabwriter.NewWriter(o.Out, 0, 8, 1, ' ', 0)
	if !noHeaders {
		fmt.Fprintln(tw, "Resources\tNon-Resource URLs\tResource Names\tVerbs")
	}
	list := func(s string) string {
		if s == "" {
			return "[]"
		}
		return "[" + s + "]"
	}
	for _, k := range order {
		l := byKey[k]
		fmt.Fprintf(tw, "%s\t%s\t%s\t[%s]\n", l.resource, list(l.url), list(l.name), strings.Join(l.verbs, " "))
	}
	return tw.Flush()
}
