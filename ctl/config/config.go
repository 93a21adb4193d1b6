package config

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func writeKubeconfig(path string, k *client.Kubeconfig) error {
	b, err := yaml.Marshal(k)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// NewCmdConfig is kubectl config: view (secrets redacted unless
// --raw), get-contexts, current-context, use-context, set-context.
func NewCmdConfig(o *cmdutil.Options) *cobra.Command {
	root := &cobra.Command{Use: "config", Short: "Show or change the kubeconfig (kubectl config)"}
	var raw bool
	view := &cobra.Command{Use: "view", Short: "Print the kubeconfig; certificate and key data redacted unless --raw", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, k, err := o.ReadKubeconfig()
			if err != nil {
				return err
			}
			if !raw {
				for i := range k.Clusters {
					if k.Clusters[i].Cluster.CertificateAuthorityData != "" {
						k.Clusters[i].Cluster.CertificateAuthorityData = "DATA+OMITTED"
					}
				}
				for i := range k.Users {
					u := &k.Users[i].User
					for _, f := range []*string{&u.ClientCertificateData, &u.ClientKeyData, &u.Token} {
						if *f != "" {
							*f = "REDACTED"
						}
					}
				}
			}
			b, err := yaml.Marshal(k)
			if err != nil {
				return err
			}
			_, err = o.Out.Write(b)
			return err
		}}
	view.Flags().BoolVar(&raw, "raw", false, "show certificate and key data")
	getContexts := &cobra.Command{Use: "get-contexts", Short: "List the contexts", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, k, err := o.ReadKubeconfig()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(o.Out, 0, 8, 3, ' ', 0)
			fmt.Fprintln(w, "CURRENT\tNAME\tCLUSTER\tAUTHINFO\tNAMESPACE")
			for _, c := range k.Contexts {
				cur := ""
				if c.Name == k.CurrentContext {
					cur = "*"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", cur, c.Name, c.Context.Cluster, c.Context.User, c.Context.Namespace)
			}
			return w.Flush()
		}}
	current := &cobra.Command{Use: "current-context", Short: "Print the current context", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, k, err := o.ReadKubeconfig()
			if err != nil {
				return err
			}
			if k.CurrentContext == "" {
				return errors.New("current-context is not set")
			}
			fmt.Fprintln(o.Out, k.CurrentContext)
			return nil
		}}
	use := &cobra.Command{Use: "use-context NAME", Short: "Make a context the current one", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, k, err := o.ReadKubeconfig()
			if err != nil {
				return err
			}
			found := false
			for _, c := range k.Contexts {
				found = found || c.Name == args[0]
			}
			if !found {
				return fmt.Errorf("no context exists with the name: %q", args[0])
			}
			k.CurrentContext = args[0]
			if err := writeKubeconfig(path, k); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "Switched to context %q.\n", args[0])
			return nil
		}}
	var cluster, user string
	var currentCtx bool
	set := &cobra.Command{Use: "set-context [NAME | --current] [--cluster C] [--user U] [--namespace NS]", Short: "Make or change a context",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, k, err := o.ReadKubeconfig()
			if err != nil {
				return err
			}
			name := k.CurrentContext
			switch {
			case currentCtx && len(args) == 0:
			case !currentCtx && len(args) == 1:
				name = args[0]
			default:
				return errors.New("name one context, or give --current")
			}
			if name == "" {
				return errors.New("there is no current context to change")
			}
			ns := o.Namespace // --namespace / -n, the global flag
			i := -1
			for j := range k.Contexts {
				if k.Contexts[j].Name == name {
					i = j
				}
			}
			verb := "modified"
			if i < 0 {
				k.Contexts = append(k.Contexts, client.NamedContext{Name: name})
				i, verb = len(k.Contexts)-1, "created"
			}
			c := &k.Contexts[i].Context
			if cluster != "" {
				c.Cluster = cluster
			}
			if user != "" {
				c.User = user
			}
			if ns != "" {
				c.Namespace = ns
			}
			if err := writeKubeconfig(path, k); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "Context %q %s.\n", name, verb)
			return nil
		}}
	set.Flags().StringVar(&cluster, "cluster", "", "the context's cluster")
	set.Flags().StringVar(&user, "user", "", "the context's user")
	set.Flags().BoolVar(&currentCtx, "current", false, "change the current context")
	root.AddCommand(view, getContexts, current, use, set)
	return root
}
