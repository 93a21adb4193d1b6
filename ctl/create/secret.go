package create

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func newCreateSecretCommand(o *cmdutil.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret (generic | tls) NAME ...",
		Short: "Create a Secret (kubectl create secret)",
		Example: `  # A password from the command line
  kobectl create secret generic db-pass --from-literal=password=s3cret

  # A certificate and its key, for TLS
  kobectl create secret tls web-tls --cert=tls.crt --key=tls.key`,
	}
	var g genFlags
	var literals, files, envFiles []string
	var typ string
	generic := &cobra.Command{
		Use:     "generic NAME [--from-literal=KEY=VALUE] [--from-file=[KEY=]PATH] [--from-env-file=PATH] [--type=TYPE]",
		Short:   "Create a Secret from literals and files (kubectl create secret generic)",
		Example: "  kobectl create secret generic db-pass --from-literal=user=app --from-literal=password=s3cret",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := keyValues(literals, files, envFiles)
			if err != nil {
				return err
			}
			return emitSecret(o, cmd, args[0], typ, data, &g)
		},
	}
	g.register(generic)
	generic.Flags().StringArrayVar(&literals, "from-literal", nil, "a key and its value, KEY=VALUE (repeatable)")
	generic.Flags().StringArrayVar(&files, "from-file", nil, "a file (its name the key, or KEY=PATH) or a directory (repeatable)")
	generic.Flags().StringArrayVar(&envFiles, "from-env-file", nil, "a file of KEY=VALUE lines (repeatable)")
	generic.Flags().StringVar(&typ, "type", "Opaque", "the Secret's type")
	var tg genFlags
	var cert, key string
	tls := &cobra.Command{
		Use:     "tls NAME --cert=PATH --key=PATH",
		Short:   "Create a kubernetes.io/tls Secret from a certificate and its key (kubectl create secret tls)",
		Example: "  kobectl create secret tls web-tls --cert=tls.crt --key=tls.key",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cert == "" || key == "" {
				return fmt.Errorf("--cert and --key are both required")
			}
			data, err := keyValues(nil, []string{"tls.crt=" + cert, "tls.key=" + key}, nil)
			if err != nil {
				return err
			}
			return emitSecret(o, cmd, args[0], "kubernetes.io/tls", data, &tg)
		},
	}
	tg.register(tls)
	tls.Flags().StringVar(&cert, "cert", "", "the PEM certificate (chain) file")
	tls.Flags().StringVar(&key, "key", "", "the PEM private key file")
	cmd.AddCommand(generic, tls)
	return cmd
}

func emitSecret(o *cmdutil.Options, cmd *cobra.Command, name, typ string, data map[string]string, g *genFlags) error {
	s := &core.Secret{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta.ObjectMeta{Name: name}, Type: typ, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return emitFor(o, cmd, s, g)
}
