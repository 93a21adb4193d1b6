package drain

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdCordon is kubectl cordon and uncordon: a node's
// spec.unschedulable, which the scheduler honours (existing pods stay).
func NewCmdCordon(o *cmdutil.Options, cordon bool) *cobra.Command {
	use, verb := "cordon", "cordoned"
	if !cordon {
		use, verb = "uncordon", "uncordoned"
	}
	return &cobra.Command{
		Use:     use + " NODE",
		Short:   map[bool]string{true: "Mark a node unschedulable: new pods go elsewhere, running ones stay (kubectl cordon)", false: "Mark a node schedulable again (kubectl uncordon)"}[cordon],
		Example: "  kobectl " + use + " node-1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, names, err := o.ParseTarget(append([]string{"node"}, args...))
			if err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, cordon)
			if !cordon {
				patch = `{"spec":{"unschedulable":null}}`
			}
			if _, err := c.Resource(k).Patch(ctx, "", names[0], client.MergePatch, []byte(patch), client.PatchOptions{FieldManager: "kobectl-" + use}); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "node/%s %s\n", names[0], verb)
			return nil
		},
	}
}
