package drain

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// taintArg is one KEY[=VALUE]:EFFECT (add) or KEY[:EFFECT]- (remove).
type taintArg struct {
	taint  core.Taint
	remove bool
}

func parseTaint(arg string) (taintArg, error) {
	var t taintArg
	spec, remove := strings.CutSuffix(arg, "-")
	t.remove = remove
	kv, effect, hasEffect := strings.Cut(spec, ":")
	key, value, _ := strings.Cut(kv, "=")
	t.taint = core.Taint{Key: key, Value: value, Effect: core.TaintEffect(effect)}
	if err := selector.ValidLabelKey(key); err != nil {
		return t, fmt.Errorf("taint %q: key: %v", arg, err)
	}
	if value != "" {
		if err := selector.ValidLabelValue(value); err != nil {
			return t, fmt.Errorf("taint %q: value: %v", arg, err)
		}
	}
	switch core.TaintEffect(effect) {
	case core.TaintNoSchedule, core.TaintPreferNoSchedule, core.TaintNoExecute:
	case "":
		if !remove || hasEffect {
			return t, fmt.Errorf("taint %q: name an effect: NoSchedule, PreferNoSchedule or NoExecute, as in %s:NoSchedule", arg, kv)
		}
	default:
		return t, fmt.Errorf("taint %q: unknown effect %q: use NoSchedule, PreferNoSchedule or NoExecute", arg, effect)
	}
	return t, nil
}

func NewCmdTaint(o *cmdutil.Options) *cobra.Command {
	var overwrite bool
	cmd := &cobra.Command{
		Use:   "taint nodes NODE KEY[=VALUE]:EFFECT ... | KEY[:EFFECT]- ...",
		Short: "Add or remove taints of a node (kubectl taint)",
		Long: `Taint a node so that only pods that tolerate the taint are scheduled
there (NoSchedule), preferably not there (PreferNoSchedule), or stay
there (NoExecute evicts the others). A trailing - removes a taint: with an
effect only that one, without every taint of that key.`,
		Example: `  # Only pods tolerating dedicated=db go to node-1
  kobectl taint nodes node-1 dedicated=db:NoSchedule

  # Remove it again
  kobectl taint nodes node-1 dedicated:NoSchedule-

  # Evict every pod that does not tolerate maintenance
  kobectl taint node node-2 maintenance=true:NoExecute`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if t := args[0]; t != "nodes" && t != "node" && t != "no" {
				return fmt.Errorf("only nodes have taints, not %q", t)
			}
			var changes []taintArg
			for _, a := range args[2:] {
				t, err := parseTaint(a)
				if err != nil {
					return err
				}
				changes = append(changes, t)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			nodes := client.For[*core.Node](c)
			var removed bool
			n, err := nodes.Modify(ctx, "", args[1], func(n *core.Node) (err error) {
				removed, err = applyTaints(n, changes, overwrite)
				return err
			})
			if err != nil {
				return err
			}
			verb := "tainted"
			if removed {
				verb = "untainted"
			}
			fmt.Fprintf(o.Out, "node/%s %s\n", n.Name, verb)
			return nil
		},
	}
	cmd.Flags().BoolVar(&overwrite, "overwrite", false, "change the value of a taint that is already set")
	return cmd
}

// applyTaints changes n's taints; it says whether the last change removed.
func applyTaints(n *core.Node, changes []taintArg, overwrite bool) (bool, error) {
	removed := false
	for _, ch := range changes {
		t := ch.taint
		if ch.remove {
			kept, found := n.Spec.Taints[:0], false
			for _, have := range n.Spec.Taints {
				if have.Key == t.Key && (t.Effect == "" || have.Effect == t.Effect) {
					found = true
					continue
				}
				kept = append(kept, have)
			}
			if !found {
				return false, fmt.Errorf("taint %q not found", t.Key)
			}
			n.Spec.Taints, removed = kept, true
			continue
		}
		replaced := false
		for i, have := range n.Spec.Taints {
			if have.Key == t.Key && have.Effect == t.Effect {
				if have.Value != t.Value && !overwrite {
					return false, fmt.Errorf("node %s already has %s taint(s) with the same effect(s) and --overwrite is false", n.Name, t.Key)
				}
				n.Spec.Taints[i].Value, replaced = t.Value, true
			}
		}
		if !replaced {
			n.Spec.Taints = append(n.Spec.Taints, t)
		}
		removed = false
	}
	return removed, nil
}
