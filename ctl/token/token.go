package token

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdToken is `kubeadm token create` for Kobune: a bootstrap token
// a new node joins with (kobune-agent --bootstrap-kubeconfig).
func NewCmdToken(o *cmdutil.Options) *cobra.Command {
	root := &cobra.Command{Use: "token", Short: "Make bootstrap tokens for joining nodes (kubeadm token)"}
	var ttl time.Duration
	var description, out string
	create := &cobra.Command{
		Use:   "create [--ttl 24h] [--kubeconfig-out FILE]",
		Short: "Make a bootstrap token and print it (with --kubeconfig-out, also a bootstrap kubeconfig for kobune-agent)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			tok, err := c.CreateBootstrapToken(ctx, ttl, description)
			if err != nil {
				return err
			}
			if out != "" {
				cfg, err := o.ClientConfig()
				if err != nil {
					return err
				}
				b, err := pki.TokenKubeconfig(cfg.Server, cfg.CA, tok, "system:bootstrap:"+tok[:6])
				if err != nil {
					return err
				}
				if err := os.WriteFile(out, b, 0o600); err != nil {
					return err
				}
			}
			fmt.Fprintln(o.Out, tok)
			return nil
		},
	}
	create.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token is valid")
	create.Flags().StringVar(&description, "description", "", "what the token is for")
	create.Flags().StringVar(&out, "kubeconfig-out", "", "also write a bootstrap kubeconfig (this server, its CA, the token) to this file")
	root.AddCommand(create)
	return root
}

// NewCmdCertificate is `kubectl certificate approve|deny NAME`.
func NewCmdCertificate(o *cmdutil.Options) *cobra.Command {
	root := &cobra.Command{Use: "certificate", Short: "Approve or deny CertificateSigningRequests (kubectl certificate)"}
	// kubectl's words: the verb, and the reason its condition carries.
	verbs := map[string]struct{ use, short, reason string }{
		certificates.Approved: {"approve", "Approve", "KubectlApprove"},
		certificates.Denied:   {"deny", "Deny", "KubectlDeny"},
	}
	for _, verdict := range []string{certificates.Approved, certificates.Denied} {
		v := verbs[verdict]
		root.AddCommand(&cobra.Command{
			Use:   v.use + " NAME",
			Short: v.short + " a CertificateSigningRequest",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := o.Client()
				if err != nil {
					return err
				}
				ctx, cancel := cmdutil.CtxFor(cmd)
				defer cancel()
				csrs := client.For[*certificates.CertificateSigningRequest](c)
				r, err := csrs.Get(ctx, "", args[0])
				if err != nil {
					return err
				}
				now := meta.Now()
				r.Status.Conditions = append(slices.Clone(r.Status.Conditions), certificates.Condition{Type: verdict, Status: "True",
					Reason: v.reason, Message: "This CSR was " + map[string]string{certificates.Approved: "approved", certificates.Denied: "denied"}[verdict] + " by kobectl certificate.",
					LastUpdateTime: now, LastTransitionTime: now})
				if _, err := csrs.UpdateStatus(ctx, r); err != nil {
					return err
				}
				fmt.Fprintf(o.Out, "certificatesigningrequest.certificates.k8s.io/%s %s\n", args[0], map[string]string{certificates.Approved: "approved", certificates.Denied: "denied"}[verdict])
				return nil
			},
		})
	}
	return root
}
