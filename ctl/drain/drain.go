package drain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// RetryInterval is how long drain waits before asking again for an eviction
// a budget refused (kubectl's 5 s).
var RetryInterval = 5 * time.Second

// NewCmdDrain is kubectl drain: cordon a node, then evict its pods
// through the eviction subresource, so that PodDisruptionBudgets hold.
func NewCmdDrain(o *cmdutil.Options) *cobra.Command {
	var ignoreDaemonSets, deleteEmptyDir, force bool
	var timeout time.Duration
	var grace int64
	cmd := &cobra.Command{
		Use:   "drain NODE",
		Short: "Cordon a node and evict its pods within their disruption budgets (kubectl drain)",
		Long: `Mark the node unschedulable, then evict every pod on it through the
eviction API: a pod whose PodDisruptionBudget allows no disruption now is
asked again every 5 s (its controller's replacement must become ready
elsewhere first), so the budget holds throughout. DaemonSet pods are not
evicted (their controller would put them back): --ignore-daemonsets goes
on without them. Pods with emptyDir data (lost with the pod) and pods no
controller would replace need --delete-emptydir-data and --force.`,
		Example: "  kobectl drain node-1 --ignore-daemonsets\n  kobectl uncordon node-1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var gp *int64
			if grace >= 0 {
				gp = &grace
			}
			return drain(o, cmd, args[0], ignoreDaemonSets, deleteEmptyDir, force, timeout, gp)
		},
	}
	cmd.Flags().BoolVar(&ignoreDaemonSets, "ignore-daemonsets", false, "leave DaemonSet-managed pods where they are and drain the rest")
	cmd.Flags().BoolVar(&deleteEmptyDir, "delete-emptydir-data", false, "evict pods with emptyDir volumes too (their data is lost)")
	cmd.Flags().BoolVar(&force, "force", false, "evict pods no controller manages too (nothing recreates them)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait for ever)")
	cmd.Flags().Int64Var(&grace, "grace-period", -1, "seconds each pod gets to stop (-1: its own terminationGracePeriodSeconds)")
	return cmd
}

func drain(o *cmdutil.Options, cmd *cobra.Command, node string, ignoreDS, deleteEmptyDir, force bool, timeout time.Duration, grace *int64) error {
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(cmd.Context(), timeout)
	}
	defer cancel()
	nodeKind, _, err := o.ParseTarget([]string{"node", node})
	if err != nil {
		return err
	}
	if _, err := c.Resource(nodeKind).Patch(ctx, "", node, client.MergePatch, []byte(`{"spec":{"unschedulable":true}}`), client.PatchOptions{FieldManager: "kobectl-drain"}); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "node/%s cordoned\n", node)
	pods, _, err := client.For[*core.Pod](c).List(ctx, "", client.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return err
	}
	var evict []*core.Pod
	var problems, ignored, unmanaged []string
	for _, p := range pods {
		id := p.Namespace + "/" + p.Name
		ref := meta.ControllerOf(p)
		finished := p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed
		switch {
		case ref != nil && ref.Kind == "DaemonSet":
			if !ignoreDS {
				problems = append(problems, "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "+id)
			} else {
				ignored = append(ignored, id)
			}
			continue
		case ref == nil && !finished:
			if !force {
				problems = append(problems, "cannot delete Pods that declare no controller (use --force to override): "+id)
				continue
			}
			unmanaged = append(unmanaged, id)
		}
		if hasEmptyDir(p) && !deleteEmptyDir && !finished {
			problems = append(problems, "cannot delete Pods with local storage (use --delete-emptydir-data to override): "+id)
			continue
		}
		evict = append(evict, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("unable to drain node %q due to error: [%s]; node/%s stays cordoned (kobectl uncordon %s undoes it)", node, strings.Join(problems, ", "), node, node)
	}
	if len(ignored) > 0 {
		fmt.Fprintf(o.ErrOut, "Warning: ignoring DaemonSet-managed Pods: %s\n", strings.Join(ignored, ", "))
	}
	if len(unmanaged) > 0 {
		fmt.Fprintf(o.ErrOut, "Warning: deleting Pods that declare no controller: %s\n", strings.Join(unmanaged, ", "))
	}
	var mu sync.Mutex
	say := func(w func(format string, a ...any), format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		w(format, a...)
	}
	out := func(format string, a ...any) { fmt.Fprintf(o.Out, format, a...) }
	errOut := func(format string, a ...any) { fmt.Fprintf(o.ErrOut, format, a...) }
	var wg sync.WaitGroup
	errs := make([]error, len(evict))
	for i, p := range evict {
		say(out, "evicting pod %s/%s\n", p.Namespace, p.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = evictAndWait(ctx, c, p, grace, func(msg string) {
				say(errOut, "error when evicting pods/%q -n %q (will retry after %v): %s\n", p.Name, p.Namespace, RetryInterval, msg)
			})
			if errs[i] == nil {
				say(out, "pod/%s evicted\n", p.Name)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("unable to drain node %q: global timeout reached: %v; node/%s stays cordoned, the pods above that were not evicted still run", node, timeout, node)
		}
		return err
	}
	fmt.Fprintf(o.Out, "node/%s drained\n", node)
	return nil
}

func hasEmptyDir(p *core.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			return true
		}
	}
	return false
}

// evictAndWait asks for the pod's eviction until the budget allows it,
// then waits until that pod is gone.
func evictAndWait(ctx context.Context, c *client.Client, p *core.Pod, grace *int64, refused func(string)) error {
	for {
		err := c.Evict(ctx, p.Namespace, p.Name, grace)
		if err == nil || client.IsNotFound(err) {
			break
		}
		if !client.IsTooManyRequests(err) {
			return fmt.Errorf("evict %s/%s: %s", p.Namespace, p.Name, client.Message(err))
		}
		refused(client.Message(err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(RetryInterval):
		}
	}
	// From the listed version on: the DELETED event is seen even if the
	// pod went before the watch started.
	_, err := client.WaitFor(ctx, client.For[*core.Pod](c), p.Namespace, p.Name, client.ResourceVersion(p), func(now *core.Pod, deleted bool) bool {
		return deleted || now.UID != p.UID
	})
	if client.IsNotFound(err) {
		return nil
	}
	return err
}
