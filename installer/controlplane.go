package installer

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// The control-plane node's label and taint, kubeadm's: the taint keeps
// ordinary pods off the machine that runs the control plane (pods that
// tolerate it, DaemonSets of add-ons, still run there); `kobeadm init
// --untaint` leaves it off, for a cluster of one machine.
const (
	LabelControlPlane = "node-role.kubernetes.io/control-plane"
	TaintControlPlane = "node-role.kubernetes.io/control-plane"
)

func markControlPlane(ctx context.Context, c *Config) error {
	cl, err := client.Dial("", AdminConf)
	if err != nil {
		return err
	}
	defer cl.Close()
	tainted, err := MarkControlPlane(ctx, client.For[*core.Node](cl), c.NodeName, !c.Untaint)
	if err != nil {
		return err
	}
	if tainted {
		fmt.Fprintf(c.Out, "\tnode %s labelled %s and tainted %s:NoSchedule (pods go to the other nodes; kobeadm init --untaint for a one-machine cluster)\n", c.NodeName, LabelControlPlane, TaintControlPlane)
	} else {
		fmt.Fprintf(c.Out, "\tnode %s labelled %s, not tainted (--untaint): ordinary pods run on it too\n", c.NodeName, LabelControlPlane)
	}
	return nil
}

// MarkControlPlane waits for the node to register, then labels it as a
// control plane and, if taint, taints it NoSchedule (without the taint
// when not: a second init with --untaint takes it off). It reports
// whether the node is tainted.
func MarkControlPlane(ctx context.Context, nodes *client.Typed[*core.Node], name string, taint bool) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		n, err := nodes.Get(ctx, "", name)
		if err == nil {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[LabelControlPlane] = ""
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t core.Taint) bool { return t.Key == TaintControlPlane })
			if taint {
				n.Spec.Taints = append(n.Spec.Taints, core.Taint{Key: TaintControlPlane, Effect: core.TaintNoSchedule})
			}
			if _, err = nodes.Update(ctx, n); err == nil {
				return taint, nil
			}
		}
		if err != nil && !client.IsNotFound(err) && !client.IsConflict(err) {
			return false, fmt.Errorf("label node %s: %s", name, client.Message(err))
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("node %s did not register within 2 minutes: journalctl -u kobune-agent says why", name)
		case <-time.After(300 * time.Millisecond):
		}
	}
}
