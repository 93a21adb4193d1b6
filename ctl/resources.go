package ctl

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/version"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func newAPIResourcesCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "api-resources",
		Short: "List the kinds the API serves (kubectl api-resources)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(o.Out, 3, 0, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSHORTNAMES\tAPIVERSION\tNAMESPACED\tKIND")
			for _, k := range o.Kinds().All() { // the custom kinds as the server serves them
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", k.PluralName(), strings.Join(k.ShortNames, ","), k.APIVersion, k.Namespaced, k.Kind)
			}
			return tw.Flush()
		},
	}
}

func newVersionCommand(o *Options) *cobra.Command {
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the client and server versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(o.Out, "Client Version: %s\n", version.Kobune)
			if clientOnly {
				return nil
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			v, err := c.Version(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "Server Version: %s (etcd %s) at %s\n", v.Version, v.EtcdVersion, c.Addr)
			return nil
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the client version only")
	return cmd
}
