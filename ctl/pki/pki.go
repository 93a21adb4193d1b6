package pki

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdPKI is Kobune's `kubeadm init phase certs` and `phase
// kubeconfig`: the cluster CA, the API server's certificate and a
// kubeconfig per component and node.
func NewCmdPKI(o *cmdutil.Options) *cobra.Command {
	root := &cobra.Command{Use: "pki", Short: "Make the cluster's certificates and kubeconfigs (kubeadm init phase certs)"}
	var opts pki.Options
	var dir string
	initCmd := &cobra.Command{
		Use:   "init --dir DIR --apiserver-url https://IP:6443 [--apiserver-name IP|NAME ...] [--node NAME ...]",
		Short: "Write ca.crt/ca.key (kept if there), apiserver.crt/key and <identity>.kubeconfig files into DIR",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--dir is required")
			}
			wrote, err := pki.Init(dir, opts)
			if err != nil {
				return err
			}
			for _, f := range wrote {
				fmt.Fprintf(o.Out, "wrote %s\n", f)
			}
			fmt.Fprintf(o.Out, "start kobune-apiserver with --tls-cert-file %s/apiserver.crt --tls-private-key-file %s/apiserver.key --client-ca-file %s/ca.crt,\n"+
				"and every component and kobectl with --kubeconfig %s/<identity>.kubeconfig\n", dir, dir, dir, dir)
			return nil
		},
	}
	initCmd.Flags().StringVar(&dir, "dir", "", "where the files go (made 0700)")
	initCmd.Flags().StringVar(&opts.Server, "apiserver-url", "", "the API server's URL the kubeconfigs name (https://172.31.0.1:6443)")
	initCmd.Flags().StringSliceVar(&opts.Names, "apiserver-name", nil, "an IP or DNS name of the API server for its certificate (127.0.0.1, localhost and kubernetes.default.svc are always in)")
	initCmd.Flags().StringSliceVar(&opts.Nodes, "node", nil, "a node's name: it gets agent-NAME and csi-NAME kubeconfigs")
	initCmd.Flags().StringArrayVar(&opts.Users, "user", nil, "a user: NAME or NAME:GROUP[:GROUP...] gets user-NAME.kubeconfig (no rights until a RoleBinding grants some)")
	initCmd.Flags().DurationVar(&opts.Validity, "validity", 0, "how long the certificates are valid (default 8760h)")
	root.AddCommand(initCmd)
	return root
}
