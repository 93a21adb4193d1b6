package podio

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
)

// podRef is a POD or TYPE/NAME argument of logs, exec, attach and
// port-forward, resolved to one pod as kubectl resolves it: a pod by name;
// for a Service, Deployment, ReplicaSet, StatefulSet, DaemonSet or Job,
// one of the pods its selector matches (running and ready ones first, then
// the oldest).
type podRef struct {
	pod *core.Pod
	svc *core.Service // set when the argument named a Service
	// among is how many pods the TYPE/NAME selected (logs says which one
	// it picked when there were several, as kubectl does).
	among int
}

func resolvePod(ctx context.Context, c *client.Client, ns, arg string) (podRef, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		kind, name = "pod", arg
	}
	var ref podRef
	var ls *meta.LabelSelector
	var ownerUID string // for a Job without a selector: its pods by owner
	var err error
	switch kind {
	case "pod", "pods", "po":
		ref.pod, err = client.For[*core.Pod](c).Get(ctx, ns, name)
		return ref, err
	case "service", "services", "svc":
		if ref.svc, err = client.For[*core.Service](c).Get(ctx, ns, name); err == nil {
			if len(ref.svc.Spec.Selector) == 0 {
				return ref, fmt.Errorf("service %s has no selector: it has no pods", name)
			}
			ls = &meta.LabelSelector{MatchLabels: ref.svc.Spec.Selector}
		}
		kind = "service"
	case "deployment", "deployments", "deploy":
		var d *apps.Deployment
		if d, err = client.For[*apps.Deployment](c).Get(ctx, ns, name); err == nil {
			ls = d.Spec.Selector
		}
		kind = "deployment"
	case "replicaset", "replicasets", "rs":
		var r *apps.ReplicaSet
		if r, err = client.For[*apps.ReplicaSet](c).Get(ctx, ns, name); err == nil {
			ls = r.Spec.Selector
		}
		kind = "replicaset"
	case "replicationcontroller", "replicationcontrollers", "rc":
		var r *core.ReplicationController
		if r, err = client.For[*core.ReplicationController](c).Get(ctx, ns, name); err == nil {
			ls = &meta.LabelSelector{MatchLabels: r.Spec.Selector}
		}
		kind = "replicationcontroller"
	case "statefulset", "statefulsets", "sts":
		var s *apps.StatefulSet
		if s, err = client.For[*apps.StatefulSet](c).Get(ctx, ns, name); err == nil {
			ls = s.Spec.Selector
		}
		kind = "statefulset"
	case "daemonset", "daemonsets", "ds":
		var d *apps.DaemonSet
		if d, err = client.For[*apps.DaemonSet](c).Get(ctx, ns, name); err == nil {
			ls = d.Spec.Selector
		}
		kind = "daemonset"
	case "job", "jobs":
		var j *batch.Job
		if j, err = client.For[*batch.Job](c).Get(ctx, ns, name); err == nil {
			ls, ownerUID = j.Spec.Selector, j.UID
		}
		kind = "job"
	default:
		return ref, fmt.Errorf("%q: name a pod, or a service, deployment, replicaset, statefulset, daemonset or job (TYPE/NAME)", arg)
	}
	if err != nil {
		return ref, err
	}
	ref.pod, ref.among, err = firstPod(ctx, c, ns, kind+"/"+name, ls, ownerUID)
	return ref, err
}

// firstPod picks the pod kubectl would among those ls selects (those
// ownerUID controls, when there is no selector): running and ready ones
// first, then running ones, then the oldest, then by name.
func firstPod(ctx context.Context, c *client.Client, ns, owner string, ls *meta.LabelSelector, ownerUID string) (*core.Pod, int, error) {
	if ls == nil && ownerUID == "" {
		return nil, 0, fmt.Errorf("%s has no selector: it selects no pods", owner)
	}
	opts := client.ListOptions{}
	if ls != nil {
		sel, err := selector.FromLabelSelector(ls)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", owner, err)
		}
		opts.LabelSelector = sel.String()
	}
	all, _, err := client.For[*core.Pod](c).List(ctx, ns, opts)
	if err != nil {
		return nil, 0, err
	}
	var pods []*core.Pod
	for _, p := range all {
		if ls != nil || controlledBy(p, ownerUID) {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return nil, 0, fmt.Errorf("%s has no pods (kobectl get pods -n %s)", owner, ns)
	}
	rank := func(p *core.Pod) int {
		switch {
		case p.DeletionTimestamp != nil:
			return 3
		case p.Status.Phase == core.PodRunning && core.PodIsReady(p):
			return 0
		case p.Status.Phase == core.PodRunning:
			return 1
		}
		return 2
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if !a.CreationTimestamp.Equal(b.CreationTimestamp.Time) {
			return a.CreationTimestamp.Before(b.CreationTimestamp.Time)
		}
		return a.Name < b.Name
	})
	return pods[0], len(pods), nil
}

func controlledBy(p *core.Pod, uid string) bool {
	for _, r := range p.OwnerReferences {
		if r.UID == uid && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}

// DefaultContainerAnnotation names the container kubectl's exec, attach
// and logs pick when none is named.
const DefaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// defaultContainer is the container to use when the command names none,
// as kubectl picks it: the one the pod's kubectl.kubernetes.io/default-
// container annotation names, else the first container — saying so on
// errOut when the pod has more than one ("Defaulted container ... out of:
// ..."). The API server would otherwise refuse: it takes no default for a
// pod of several containers.
func defaultContainer(p *core.Pod, errOut io.Writer) string {
	if name := p.Annotations[DefaultContainerAnnotation]; name != "" {
		for _, c := range p.Spec.Containers {
			if c.Name == name {
				return name
			}
		}
		fmt.Fprintf(errOut, "Default container name %q not found in pod %s\n", name, p.Name)
	}
	if len(p.Spec.Containers) == 0 {
		return ""
	}
	first := p.Spec.Containers[0].Name
	if len(p.Spec.Containers)+len(p.Spec.InitContainers)+len(p.Spec.EphemeralContainers) > 1 {
		var all []string
		for _, c := range p.Spec.Containers {
			all = append(all, c.Name)
		}
		for _, c := range p.Spec.EphemeralContainers {
			all = append(all, c.Name+" (ephem)")
		}
		for _, c := range p.Spec.InitContainers {
			all = append(all, c.Name+" (init)")
		}
		fmt.Fprintf(errOut, "Defaulted container %q out of: %s\n", first, strings.Join(all, ", "))
	}
	return first
}
