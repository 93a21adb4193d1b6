package rollout

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/printers"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
	"github.com/kobune/kobune/ctl/describe"
)

// deploymentTarget reads "deployment/NAME", "deployment NAME" or
// "deploy NAME" (the kinds rollout works on).
func deploymentTarget(args []string) (string, error) {
	k, names, err := cmdutil.ParseTarget(args) // built-in kinds only
	if err != nil {
		return "", err
	}
	switch k.Kind {
	case "Deployment":
	case "StatefulSet", "DaemonSet":
		return "", fmt.Errorf("%s.apps %q: only deployments here (pausing is a Deployment's; rollout status, history, undo and restart work on %s)", k.Resource, strings.Join(names, ","), k.Resource)
	default:
		return "", fmt.Errorf("%s is not supported here: only deployments (kobectl rollout status deployment/NAME)", k.Resource)
	}
	if len(names) != 1 {
		return "", fmt.Errorf("name one deployment: kobectl rollout ... deployment/NAME")
	}
	return names[0], nil
}

// onDeployment is the body of a command on one Deployment: it reads the
// target, connects, and calls run with a minute's deadline.
func onDeployment(o *cmdutil.Options, run func(ctx context.Context, c *client.Client, name string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		name, err := deploymentTarget(args)
		if err != nil {
			return err
		}
		c, err := o.Client()
		if err != nil {
			return err
		}
		ctx, cancel := cmdutil.CtxFor(cmd)
		defer cancel()
		return run(ctx, c, name)
	}
}

// updateDeployment reads, changes and writes a Deployment, again on a
// conflict (someone else wrote in between). change returns an error to
// refuse the change.
func updateDeployment(ctx context.Context, c *client.Client, ns, name string, change func(*apps.Deployment) error) error {
	return updateChecked(ctx, client.For[*apps.Deployment](c), ns, name, change)
}

func NewCmdScale(o *cmdutil.Options) *cobra.Command {
	var replicas int32
	cmd := &cobra.Command{
		Use:   "scale TYPE/NAME --replicas=N",
		Short: "Set the replicas of a Deployment, ReplicaSet or StatefulSet (kubectl scale)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if replicas < 0 {
				return fmt.Errorf("--replicas=%d: must be 0 or more", replicas)
			}
			k, names, err := cmdutil.ParseTarget(args) // built-in kinds only
			if err != nil {
				return err
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			ns := o.NamespaceFor(k, false)
			for _, name := range names {
				switch k.Kind {
				case "Deployment":
					err = updateDeployment(ctx, c, ns, name, func(d *apps.Deployment) error { d.Spec.Replicas = &replicas; return nil })
				case "ReplicaSet":
					err = updateRetrying(ctx, client.For[*apps.ReplicaSet](c), ns, name, func(r *apps.ReplicaSet) { r.Spec.Replicas = &replicas })
				case "StatefulSet":
					err = updateRetrying(ctx, client.For[*apps.StatefulSet](c), ns, name, func(r *apps.StatefulSet) { r.Spec.Replicas = &replicas })
				case "ReplicationController":
					err = updateRetrying(ctx, client.For[*core.ReplicationController](c), ns, name, func(r *core.ReplicationController) { r.Spec.Replicas = &replicas })
				default:
					return fmt.Errorf("%s cannot be scaled: only deployments, replicasets, statefulsets and replicationcontrollers", k.Resource)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(o.Out, "%s/%s scaled\n", cmdutil.Qualified(k.Resource, k.APIVersion), name)
			}
			return nil
		},
	}
	cmd.Flags().Int32Var(&replicas, "replicas", -1, "the new number of replicas (required)")
	_ = cmd.MarkFlagRequired("replicas")
	return cmd
}

// updateRetrying reads the object, changes it and writes it back, again
// on a conflict.
func updateRetrying[T meta.Object](ctx context.Context, typed *client.Typed[T], ns, name string, change func(T)) error {
	return updateChecked(ctx, typed, ns, name, func(o T) error { change(o); return nil })
}

// updateChecked is updateRetrying with a change that may refuse (an
// error, nothing written).
func updateChecked[T meta.Object](ctx context.Context, typed *client.Typed[T], ns, name string, change func(T) error) error {
	_, err := typed.Modify(ctx, ns, name, change)
	return err
}

func NewCmdSet(o *cmdutil.Options) *cobra.Command {
	set := &cobra.Command{Use: "set", Short: "Change one field of an object (kubectl set)"}
	set.AddCommand(&cobra.Command{
		Use:   "image (deployment|statefulset|daemonset)/NAME CONTAINER=IMAGE [...]",
		Short: "Change container images of a pod template; a rollout follows",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, name, err := rolloutTarget(args[:1])
			if err != nil {
				return err
			}
			images := map[string]string{}
			for _, a := range args[1:] {
				cname, image, ok := strings.Cut(a, "=")
				if !ok || cname == "" || image == "" {
					return fmt.Errorf("%q: want CONTAINER=IMAGE (or *=IMAGE for every container)", a)
				}
				images[cname] = image
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			setImages := func(t *core.PodTemplateSpec) error {
				found := map[string]bool{}
				for i := range t.Spec.Containers {
					ct := &t.Spec.Containers[i]
					if img, ok := images[ct.Name]; ok {
						ct.Image, found[ct.Name] = img, true
					} else if img, ok := images["*"]; ok {
						ct.Image, found["*"] = img, true
					}
				}
				for cname := range images {
					if !found[cname] {
						return fmt.Errorf("unable to find container named %q in %s %q", cname, strings.ToLower(k.Kind), name)
					}
				}
				return nil
			}
			ns := o.NamespaceOrDefault()
			switch k.Kind {
			case "Deployment":
				err = updateDeployment(ctx, c, ns, name, func(d *apps.Deployment) error { return setImages(&d.Spec.Template) })
			case "StatefulSet":
				err = updateChecked(ctx, client.For[*apps.StatefulSet](c), ns, name, func(s *apps.StatefulSet) error { return setImages(&s.Spec.Template) })
			case "DaemonSet":
				err = updateChecked(ctx, client.For[*apps.DaemonSet](c), ns, name, func(d *apps.DaemonSet) error { return setImages(&d.Spec.Template) })
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s/%s image updated\n", cmdutil.Qualified(k.Resource, k.APIVersion), name)
			return nil
		},
	})
	return set
}

func NewCmdRollout(o *cmdutil.Options) *cobra.Command {
	rollout := &cobra.Command{Use: "rollout", Short: "Follow and manage rollouts of Deployments, StatefulSets and DaemonSets (kubectl rollout)"}
	var timeout time.Duration
	status := &cobra.Command{
		Use:   "status (deployment|statefulset|daemonset)/NAME",
		Short: "Wait for a rollout to finish, showing its progress; non-zero exit if it stalls",
		Args:  cobra.MinimumNArgs(1),
		RunE: onRolloutTarget(o, func(cmd *cobra.Command, c *client.Client, k *scheme.Kind, name string) error {
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return rolloutStatus(ctx, o, c, k, name)
		}),
	}
	status.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: wait until the rollout finishes or stalls)")

	var revision int64
	history := &cobra.Command{
		Use:   "history (deployment|statefulset|daemonset)/NAME",
		Short: "List the revisions of a rollout, or show one with --revision",
		Args:  cobra.MinimumNArgs(1),
		RunE: onRolloutTarget(o, func(cmd *cobra.Command, c *client.Client, k *scheme.Kind, name string) error {
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			revs, err := rolloutRevisions(ctx, c, k, o.NamespaceOrDefault(), name)
			if err != nil {
				return err
			}
			what := cmdutil.Qualified(k.Resource, k.APIVersion) + "/" + name
			if revision > 0 {
				r, ok := revs[revision]
				if !ok {
					return fmt.Errorf("unable to find the specified revision %d", revision)
				}
				// As kubectl: the template in describe's words.
				fmt.Fprintf(o.Out, "%s with revision #%d\n", what, revision)
				tw := tabwriter.NewWriter(o.Out, 0, 8, 2, ' ', 0)
				describe.PodTemplate(tw, &r.template)
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(o.Out)
				return nil
			}
			fmt.Fprintln(o.Out, what)
			tw := tabwriter.NewWriter(o.Out, 0, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
			for _, n := range sortedRevisions(revs) {
				fmt.Fprintf(tw, "%d\t%s\n", n, printers.None(revs[n].cause))
			}
			return tw.Flush()
		}),
	}
	history.Flags().Int64Var(&revision, "revision", 0, "show the pod template of this revision")

	var toRevision int64
	undo := &cobra.Command{
		Use:   "undo (deployment|statefulset|daemonset)/NAME [--to-revision=N]",
		Short: "Roll back to the previous revision, or to --to-revision",
		Args:  cobra.MinimumNArgs(1),
		RunE: onRolloutTarget(o, func(cmd *cobra.Command, c *client.Client, k *scheme.Kind, name string) error {
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			if k.Kind == "Deployment" {
				return rolloutUndo(ctx, o, c, name, toRevision)
			}
			return rolloutUndoRevision(ctx, o, c, k, name, toRevision)
		}),
	}
	undo.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to go back to (0: the one before the current)")

	simple := func(use, short, done string, change func(*apps.Deployment) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " deployment/NAME", Short: short, Args: cobra.MinimumNArgs(1),
			RunE: onDeployment(o, func(ctx context.Context, c *client.Client, name string) error {
				if err := updateDeployment(ctx, c, o.NamespaceOrDefault(), name, change); err != nil {
					return err
				}
				fmt.Fprintf(o.Out, "deployment.apps/%s %s\n", name, done)
				return nil
			}),
		}
	}
	restart := &cobra.Command{
		Use:   "restart (deployment|statefulset|daemonset)/NAME",
		Short: "Replace every pod, by a rollout (sets the restartedAt template annotation)",
		Args:  cobra.MinimumNArgs(1),
		RunE: onRolloutTarget(o, func(cmd *cobra.Command, c *client.Client, k *scheme.Kind, name string) error {
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			ns := o.NamespaceOrDefault()
			var err error
			switch k.Kind {
			case "Deployment":
				err = updateDeployment(ctx, c, ns, name, func(d *apps.Deployment) error {
					if d.Spec.Paused {
						return fmt.Errorf("can't restart paused deployment (run rollout resume first)")
					}
					markRestarted(&d.Spec.Template)
					return nil
				})
			case "StatefulSet":
				err = updateRetrying(ctx, client.For[*apps.StatefulSet](c), ns, name, func(s *apps.StatefulSet) { markRestarted(&s.Spec.Template) })
			case "DaemonSet":
				err = updateRetrying(ctx, client.For[*apps.DaemonSet](c), ns, name, func(d *apps.DaemonSet) { markRestarted(&d.Spec.Template) })
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s/%s restarted\n", cmdutil.Qualified(k.Resource, k.APIVersion), name)
			return nil
		}),
	}
	pause := simple("pause", "Stop rollouts of a Deployment until resumed", "paused", func(d *apps.Deployment) error {
		if d.Spec.Paused {
			return fmt.Errorf("deployments.apps %q is already paused", d.Name)
		}
		d.Spec.Paused = true
		return nil
	})
	resume := simple("resume", "Let a paused Deployment roll out again", "resumed", func(d *apps.Deployment) error {
		if !d.Spec.Paused {
			return fmt.Errorf("deployments.apps %q is not paused", d.Name)
		}
		d.Spec.Paused = false
		return nil
	})
	rollout.AddCommand(status, history, undo, restart, pause, resume)
	return rollout
}

// rolloutTarget reads the Deployment, StatefulSet or DaemonSet a rollout
// command names.
func rolloutTarget(args []string) (*scheme.Kind, string, error) {
	k, names, err := cmdutil.ParseTarget(args) // built-in kinds only
	if err != nil {
		return nil, "", err
	}
	switch k.Kind {
	case "Deployment", "StatefulSet", "DaemonSet":
	default:
		return nil, "", fmt.Errorf("%s is not supported here: deployments, statefulsets and daemonsets roll out (kobectl rollout status deployment/NAME)", k.Resource)
	}
	if len(names) != 1 {
		return nil, "", fmt.Errorf("name one %s: kobectl rollout ... %s/NAME", strings.ToLower(k.Kind), strings.ToLower(k.Kind))
	}
	return k, names[0], nil
}

// onRolloutTarget is the body of a rollout command on a Deployment,
// StatefulSet or DaemonSet: it reads the target and connects.
func onRolloutTarget(o *cmdutil.Options, run func(cmd *cobra.Command, c *client.Client, k *scheme.Kind, name string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		k, name, err := rolloutTarget(args)
		if err != nil {
			return err
		}
		c, err := o.Client()
		if err != nil {
			return err
		}
		return run(cmd, c, k, name)
	}
}

// markRestarted changes the pod template, so that every pod is replaced.
func markRestarted(t *core.PodTemplateSpec) {
	t.Annotations = maps.Clone(t.Annotations)
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().Format(time.RFC3339)
}

// rolloutStatus prints kubectl's progress lines until the rollout is done
// (nil) or past its progress deadline (an error: a non-zero exit).
func rolloutStatus(ctx context.Context, o *cmdutil.Options, c *client.Client, k *scheme.Kind, name string) error {
	what := strings.ToLower(k.Kind)
	stream, err := c.Resource(k).Watch(ctx, o.NamespaceOrDefault(), client.ListOptions{FieldSelector: "metadata.name=" + name}, 0, false)
	if err != nil {
		return err
	}
	last := ""
	for {
		ev, err := stream.Next()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("timed out waiting for the rollout of %s %q: %s", what, name, last)
			}
			return fmt.Errorf("watch of %s %q ended (%v); run the command again", what, name, err)
		}
		if ev.Type == "BOOKMARK" {
			continue
		}
		if ev.Type == "DELETED" {
			return fmt.Errorf("%s %q was deleted", what, name)
		}
		obj, err := k.Decode(ev.Object)
		if err != nil {
			return err
		}
		var msg string
		var done bool
		switch x := obj.(type) {
		case *apps.Deployment:
			msg, done, err = rolloutMessage(x)
		case *apps.StatefulSet:
			msg, done, err = statefulSetRolloutMessage(x)
		case *apps.DaemonSet:
			msg, done, err = daemonSetRolloutMessage(x)
		}
		if err != nil {
			return err
		}
		if msg != last {
			fmt.Fprintln(o.Out, msg)
			last = msg
		}
		if done {
			return nil
		}
	}
}

// statefulSetRolloutMessage is kubectl's StatefulSetStatusViewer.
func statefulSetRolloutMessage(s *apps.StatefulSet) (string, bool, error) {
	if s.Spec.UpdateStrategy.Type != "" && s.Spec.UpdateStrategy.Type != "RollingUpdate" {
		return "", true, fmt.Errorf("rollout status is only available for RollingUpdate strategy type")
	}
	st := s.Status
	if st.ObservedGeneration == 0 || s.Generation > st.ObservedGeneration {
		return "Waiting for statefulset spec update to be observed...", false, nil
	}
	if s.Spec.Replicas != nil && st.ReadyReplicas < *s.Spec.Replicas {
		return fmt.Sprintf("Waiting for %d pods to be ready...", *s.Spec.Replicas-st.ReadyReplicas), false, nil
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 && s.Spec.Replicas != nil {
		if st.UpdatedReplicas < *s.Spec.Replicas-*ru.Partition {
			return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...", st.UpdatedReplicas, *s.Spec.Replicas-*ru.Partition), false, nil
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...", st.UpdatedReplicas), true, nil
	}
	if st.UpdateRevision != st.CurrentRevision {
		return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...", st.UpdatedReplicas, st.UpdateRevision), false, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...", st.CurrentReplicas, st.CurrentRevision), true, nil
}

// daemonSetRolloutMessage is kubectl's DaemonSetStatusViewer.
func daemonSetRolloutMessage(d *apps.DaemonSet) (string, bool, error) {
	if d.Spec.UpdateStrategy.Type != "" && d.Spec.UpdateStrategy.Type != "RollingUpdate" {
		return "", true, fmt.Errorf("rollout status is only available for RollingUpdate strategy type")
	}
	st := d.Status
	switch {
	case d.Generation > st.ObservedGeneration:
		return "Waiting for daemon set spec update to be observed...", false, nil
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", d.Name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled), false, nil
	case st.NumberAvailable < st.DesiredNumberScheduled:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", d.Name, st.NumberAvailable, st.DesiredNumberScheduled), false, nil
	}
	return fmt.Sprintf("daemon set %q successfully rolled out", d.Name), true, nil
}

// rolloutMessage is kubectl's DeploymentStatusViewer.
func rolloutMessage(d *apps.Deployment) (string, bool, error) {
	if d.Generation > d.Status.ObservedGeneration {
		return "Waiting for deployment spec update to be observed...", false, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == apps.ConditionProgressing && c.Reason == apps.ReasonDeadlineExceeded {
			return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", d.Name)
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.UpdatedReplicas < want:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", d.Name, st.UpdatedReplicas, want), false, nil
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", d.Name, st.Replicas-st.UpdatedReplicas), false, nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", d.Name, st.AvailableReplicas, st.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out", d.Name), true, nil
}

// revisions maps revision → ReplicaSet for a Deployment.
func revisions(ctx context.Context, c *client.Client, ns, name string) (map[int64]*apps.ReplicaSet, error) {
	d, err := client.For[*apps.Deployment](c).Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	rss, _, err := client.For[*apps.ReplicaSet](c).List(ctx, ns, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[int64]*apps.ReplicaSet{}
	for _, rs := range rss {
		if ref := meta.ControllerOf(rs); ref != nil && ref.UID == d.UID {
			out[apps.Revision(rs)] = rs
		}
	}
	return out, nil
}

func sortedRevisions[R any](revs map[int64]R) []int64 {
	out := make([]int64, 0, len(revs))
	for r := range revs {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func withoutHash(t core.PodTemplateSpec) core.PodTemplateSpec {
	t.Labels = maps.Clone(t.Labels)
	delete(t.Labels, apps.PodTemplateHashLabel)
	return t
}

// rolloutUndo puts a revision's pod template back into the Deployment, as
// kubectl does; the controller then rolls it out as the next revision.
func rolloutUndo(ctx context.Context, o *cmdutil.Options, c *client.Client, name string, to int64) error {
	revs, err := revisions(ctx, c, o.NamespaceOrDefault(), name)
	if err != nil {
		return err
	}
	order := sortedRevisions(revs)
	if len(order) == 0 {
		return fmt.Errorf("no revision found for deployment %q", name)
	}
	current := order[len(order)-1]
	if to == 0 {
		if len(order) < 2 {
			return fmt.Errorf("no rollout history found for deployment %q", name)
		}
		to = order[len(order)-2]
	}
	target, ok := revs[to]
	if !ok {
		return fmt.Errorf("unable to find specified revision %d in history", to)
	}
	if to == current {
		fmt.Fprintf(o.Out, "deployment.apps/%s skipped rollback (current template already matches revision %s)\n", name, strconv.FormatInt(to, 10))
		return nil
	}
	err = updateDeployment(ctx, c, o.NamespaceOrDefault(), name, func(d *apps.Deployment) error {
		if d.Spec.Paused {
			return fmt.Errorf("you cannot rollback a paused deployment; resume it first with 'kobectl rollout resume deployment/%s' and try again", name)
		}
		d.Spec.Template = withoutHash(target.Spec.Template)
		if cause, ok := target.Annotations[apps.ChangeCauseAnnotation]; ok {
			d.Annotations = maps.Clone(d.Annotations)
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations[apps.ChangeCauseAnnotation] = cause
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "deployment.apps/%s rolled back\n", name)
	return nil
}
