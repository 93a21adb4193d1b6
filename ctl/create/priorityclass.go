package create

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// newCreatePriorityClassCommand is kubectl create priorityclass.
func newCreatePriorityClassCommand(o *cmdutil.Options) *cobra.Command {
	var g genFlags
	var value int32
	var description, preemption string
	var globalDefault bool
	cmd := &cobra.Command{
		Use:     "priorityclass NAME --value=N [--description=TEXT] [--preemption-policy=Never]",
		Aliases: []string{"pc"},
		Short:   "Create a PriorityClass (kubectl create priorityclass)",
		Example: "  # Pods naming it (priorityClassName: high) are scheduled first and may preempt lower ones\n" +
			"  kobectl create priorityclass high --value=1000 --description=\"serving traffic\"\n\n" +
			"  # Scheduled first, but never preempts\n" +
			"  kobectl create priorityclass batch-first --value=500 --preemption-policy=Never",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if globalDefault {
				return fmt.Errorf("--global-default: not supported by kobune: pods that name no class get priority 0; name the class in the pods (priorityClassName: %s)", args[0])
			}
			pc := &scheduling.PriorityClass{TypeMeta: meta.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"}, ObjectMeta: meta.ObjectMeta{Name: args[0]},
				Value: value, Description: description, PreemptionPolicy: &preemption}
			return emitFor(o, cmd, pc, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().Int32Var(&value, "value", 0, "the priority: pods of higher classes are scheduled first")
	cmd.Flags().StringVar(&description, "description", "", "what the class is for")
	cmd.Flags().StringVar(&preemption, "preemption-policy", "PreemptLowerPriority", "PreemptLowerPriority or Never")
	cmd.Flags().BoolVar(&globalDefault, "global-default", false, "the class of pods that name none (not supported by kobune: refused)")
	return cmd
}
