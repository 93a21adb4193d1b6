package delete

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
	"github.com/kobune/kobune/ctl/wait"
)

type deleteFlags struct {
	files       []string
	selector    string
	cascade     string
	gracePeriod int64
	force       bool
	now         bool
	ignoreNF    bool
	wait        bool
	timeout     time.Duration
	dryRun      cmdutil.DryRunMode
}

func NewCmdDelete(o *cmdutil.Options) *cobra.Command {
	var f deleteFlags
	cmd := &cobra.Command{
		Use:   "delete (TYPE NAME... | TYPE/NAME | TYPE -l SELECTOR | -f FILE)",
		Short: "Delete objects by name, by label selector or from manifests (kubectl delete)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return deleteObjects(o, cmd, &f, args)
		},
	}
	cmd.Flags().StringSliceVarP(&f.files, "filename", "f", nil, "delete the objects in these manifests")
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "delete every object matching this label selector")
	cmd.Flags().StringVar(&f.cascade, "cascade", "background", "what happens to dependents: background, foreground or orphan")
	cmd.Flags().Int64Var(&f.gracePeriod, "grace-period", -1, "seconds a pod gets to stop (-1: its own terminationGracePeriodSeconds; 0 with --force semantics)")
	cmd.Flags().BoolVar(&f.now, "now", false, "same as --grace-period=1")
	cmd.Flags().BoolVar(&f.force, "force", false, "remove pods from the API at once, without waiting for their node to stop them (grace period 0, as kubectl --force; the containers may still run a moment)")
	cmdutil.AddDryRun(cmd, &f.dryRun)
	cmd.Flags().BoolVar(&f.ignoreNF, "ignore-not-found", false, "treat a missing object as deleted")
	cmd.Flags().BoolVar(&f.wait, "wait", true, "wait until the objects are gone (a pod's containers stopped, finalizers done), as kubectl does")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "how long --wait waits (0: 60s)")
	return cmd
}

type target struct {
	kind      *scheme.Kind
	namespace string
	name      string
	// err: a document of -f that cannot be deleted (a kind or apiVersion
	// kobectl does not know); the others are deleted all the same.
	err error
}

func deleteObjects(o *cmdutil.Options, cmd *cobra.Command, f *deleteFlags, args []string) error {
	policy := map[string]string{"background": "Background", "foreground": "Foreground", "orphan": "Orphan"}[strings.ToLower(f.cascade)]
	if policy == "" {
		return fmt.Errorf("invalid --cascade %q: use background, foreground or orphan", f.cascade)
	}
	var grace *int64
	if f.force && f.gracePeriod < 0 {
		f.gracePeriod = 0
	}
	if f.now {
		one := int64(1)
		grace = &one
	} else if f.gracePeriod >= 0 {
		grace = &f.gracePeriod
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	targets, err := deleteTargets(o, ctx, c, f, args)
	if err != nil {
		return err
	}
	var lastErr error
	var deleted []target
	for _, t := range targets {
		if t.err != nil {
			if lastErr != nil {
				fmt.Fprintln(o.ErrOut, cmdutil.FormatError(lastErr, o.Server))
			}
			lastErr = t.err
			continue
		}
		if f.dryRun == "client" { // as kubectl: named, nothing sent
			fmt.Fprintf(o.Out, "%s deleted (dry run)\n", cmdutil.QuotedRef(t.kind, t.name))
			continue
		}
		err := c.Resource(t.kind).Delete(ctx, t.namespace, t.name, client.DeleteOptions{GracePeriodSeconds: grace, PropagationPolicy: policy, DryRun: f.dryRun == "server"})
		if client.IsNotFound(err) && f.ignoreNF {
			continue
		}
		if err != nil {
			if lastErr != nil {
				fmt.Fprintln(o.ErrOut, cmdutil.FormatError(lastErr, o.Server))
			}
			lastErr = err
			continue
		}
		if f.dryRun == "server" {
			fmt.Fprintf(o.Out, "%s deleted (server dry run)\n", cmdutil.QuotedRef(t.kind, t.name))
			continue // nothing to wait for
		}
		fmt.Fprintf(o.Out, "%s deleted\n", cmdutil.QuotedRef(t.kind, t.name))
		deleted = append(deleted, t)
	}
	if f.wait && lastErr == nil {
		timeout := f.timeout
		if timeout == 0 {
			timeout = 60 * time.Second
		}
		wctx, wcancel := context.WithTimeout(cmd.Context(), timeout)
		defer wcancel()
		for _, t := range deleted {
			if err := wait.UntilDeleted(wctx, c, t.kind, t.namespace, t.name); err != nil {
				if wait.TimedOut(wctx, err) {
					return fmt.Errorf("timed out waiting for %s to be gone (--wait=false returns at once)", cmdutil.QuotedRef(t.kind, t.name))
				}
				return err
			}
		}
	}
	return lastErr
}

func deleteTargets(o *cmdutil.Options, ctx context.Context, c *client.Client, f *deleteFlags, args []string) ([]target, error) {
	if len(f.files) > 0 {
		if len(args) > 0 || f.selector != "" {
			return nil, fmt.Errorf("use either -f or TYPE NAME / -l, not both")
		}
		ms, err := o.ReadManifests(f.files, o.In)
		if err != nil {
			return nil, err
		}
		var ts []target
		for i := range ms {
			if ms[i].Err != nil { // as kubectl: named, and the rest is deleted
				ts = append(ts, target{err: fmt.Errorf("%s: %w", ms[i].Source, ms[i].Err)})
				continue
			}
			if err := o.SetNamespace(&ms[i]); err != nil {
				return nil, err
			}
			m := ms[i].Object.GetObjectMeta()
			ts = append(ts, target{kind: ms[i].Kind, namespace: m.Namespace, name: m.Name})
		}
		return ts, nil
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("you must provide one or more resources by argument or filename: kobectl delete TYPE NAME, TYPE/NAME, TYPE -l SELECTOR or -f FILE")
	}
	k, names, err := o.ParseTarget(args)
	if err != nil {
		return nil, err
	}
	ns := o.NamespaceFor(k, false)
	if len(names) > 0 {
		if f.selector != "" {
			return nil, fmt.Errorf("name cannot be provided when a selector is specified")
		}
		ts := make([]target, len(names))
		for i, n := range names {
			ts[i] = target{kind: k, namespace: ns, name: n}
		}
		return ts, nil
	}
	if f.selector == "" {
		return nil, fmt.Errorf("resource(s) were provided, but no name or label selector was specified (use -l app=web, or name the objects)")
	}
	items, _, err := c.Resource(k).List(ctx, ns, client.ListOptions{LabelSelector: f.selector})
	if err != nil {
		return nil, err
	}
	var ts []target
	for _, b := range items {
		obj, err := k.Decode(b)
		if err != nil {
			return nil, err
		}
		ts = append(ts, target{kind: k, namespace: obj.GetObjectMeta().Namespace, name: obj.GetObjectMeta().Name})
	}
	if len(ts) == 0 {
		fmt.Fprintln(o.ErrOut, "No resources found")
	}
	return ts, nil
}
