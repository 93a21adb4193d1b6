package create

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// newCreatePDBCommand is kubectl create poddisruptionbudget: a budget
// for the pods --selector picks, with --min-available or
// --max-unavailable (a number or a percentage).
func newCreatePDBCommand(o *cmdutil.Options) *cobra.Command {
	var g genFlags
	var sel, minAvailable, maxUnavailable string
	cmd := &cobra.Command{
		Use:     "poddisruptionbudget NAME --selector=SELECTOR --min-available=N|N% | --max-unavailable=N|N%",
		Aliases: []string{"pdb"},
		Short:   "Create a PodDisruptionBudget (kubectl create poddisruptionbudget)",
		Example: "  # At least one pod labelled app=web stays while nodes are drained\n" +
			"  kobectl create pdb web --selector=app=web --min-available=1\n\n" +
			"  # At most half of them may be evicted at once\n" +
			"  kobectl create pdb web --selector=app=web --max-unavailable=50%",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sel == "" {
				return fmt.Errorf("--selector: a selector must be specified (the pods the budget covers, as app=web)")
			}
			parsed, err := selector.ParseLabels(sel)
			if err != nil {
				return fmt.Errorf("--selector: %w", err)
			}
			if (minAvailable == "") == (maxUnavailable == "") {
				return fmt.Errorf("one of --min-available and --max-unavailable must be specified, and not both")
			}
			b := &policy.PodDisruptionBudget{TypeMeta: meta.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}, ObjectMeta: meta.ObjectMeta{Name: args[0]},
				Spec: policy.PodDisruptionBudgetSpec{Selector: selector.ToLabelSelector(parsed)}}
			flag, value, field := "--min-available", minAvailable, &b.Spec.MinAvailable
			if maxUnavailable != "" {
				flag, value, field = "--max-unavailable", maxUnavailable, &b.Spec.MaxUnavailable
			}
			n, err := intOrPercent(value)
			if err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
			*field = &n
			return emitFor(o, cmd, b, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&sel, "selector", "", "the label selector of the pods the budget covers")
	cmd.Flags().StringVar(&minAvailable, "min-available", "", "the pods that must stay available: a number (2) or a percentage (50%)")
	cmd.Flags().StringVar(&maxUnavailable, "max-unavailable", "", "the pods that may be unavailable at once: a number (1) or a percentage (25%)")
	return cmd
}

// intOrPercent reads a count or a percentage, as "2" or "50%".
func intOrPercent(s string) (meta.IntOrString, error) {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil && n >= 0 {
		return meta.FromInt(int32(n)), nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		if n, err := strconv.Atoi(p); err == nil && n >= 0 {
			return meta.FromString(s), nil
		}
	}
	return meta.IntOrString{}, fmt.Errorf("%q is neither a number nor a percentage (as 2 or 50%%)", s)
}
