package create

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// newCreateQuotaCommand is kubectl create quota: a ResourceQuota from
// --hard=NAME=QUANTITY,... and --scopes.
func newCreateQuotaCommand(o *cmdutil.Options) *cobra.Command {
	var g genFlags
	var hard, scopes string
	cmd := &cobra.Command{
		Use:     "quota NAME --hard=pods=10,requests.cpu=2,... [--scopes=BestEffort,...]",
		Aliases: []string{"resourcequota"},
		Short:   "Create a ResourceQuota (kubectl create quota)",
		Example: "  kobectl create quota compute --hard=pods=10,requests.cpu=2,limits.memory=4Gi -n team",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := &core.ResourceQuota{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"}, ObjectMeta: meta.ObjectMeta{Name: args[0]},
				Spec: core.ResourceQuotaSpec{Hard: resource.List{}}}
			for _, kv := range strings.Split(hard, ",") {
				if kv = strings.TrimSpace(kv); kv == "" {
					continue
				}
				name, value, ok := strings.Cut(kv, "=")
				qty, err := resource.ParseQuantity(value)
				if !ok || err != nil {
					return fmt.Errorf("--hard: %q: want NAME=QUANTITY, as pods=10", kv)
				}
				q.Spec.Hard[resource.Name(name)] = qty
			}
			if scopes != "" {
				q.Spec.Scopes = strings.Split(scopes, ",")
			}
			return emitFor(o, cmd, q, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&hard, "hard", "", "the limits, NAME=QUANTITY,...")
	cmd.Flags().StringVar(&scopes, "scopes", "", "the pods it counts: BestEffort, NotBestEffort, Terminating, NotTerminating, PriorityClass (comma-separated)")
	return cmd
}
