package registry

import (
	"context"
	"github.com/kobune/kobune/api/apiextensions"
	"maps"
	"slices"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// strategy is what the generic verbs (create.go, update.go, delete.go) do
// differently for one kind — Kubernetes' REST strategies. What a kind's
// objects *are* (defaults, validation, immutable fields, selectable
// fields) is in api/scheme/kinds.go; what the server does with them beyond
// the generic verbs is here. A kind with special behaviour is an entry in
// strategies; the verbs themselves name no kind.
type strategy struct {
	// keepStatusOnCreate: a create keeps the status it carries (a Node
	// registers with its status; other kinds start with an empty one).
	keepStatusOnCreate bool
	// finishCreate fills what follows from the spec after defaulting and
	// from the new object's uid (a pod's status, a Job's selector).
	finishCreate func(meta.Object)
	// gracePeriod is how long a deletion waits for the object to be
	// stopped (a pod on a node); nil: no wait.
	gracePeriod func(o meta.Object, requested *int64) int64
	// waits reports whether the object stays until someone confirms it is
	// stopped (the agent deleting a pod with grace 0).
	waits func(meta.Object) bool
	// delete replaces the generic delete (a Namespace is marked
	// Terminating and emptied before it goes).
	delete func(s *Registry, ctx context.Context, k *scheme.Kind, o meta.Object, rev int64) (meta.Object, int64, error)
	// allocates: the admission chain allocates claims for it (a Service's
	// cluster IP and node ports), picked again if a concurrent create took
	// them first.
	allocates bool
	// prepareUpdate keeps what an update of the object itself may not
	// change (a Namespace's spec: its finalizers change only through
	// namespaces/NAME/finalize).
	prepareUpdate func(in, old meta.Object)
	// statusLabels: a write of the status subresource also sets labels
	// and annotations, as kube-apiserver's status strategy for the kind
	// lets them through (namespaces). Other kinds keep their stored
	// metadata on status writes, so that a controller's stale copy never
	// takes back a label.
	statusLabels bool
}

var strategies = map[string]strategy{
	"Node": {keepStatusOnCreate: true},
	"Pod":  {finishCreate: podFinishCreate, gracePeriod: podGracePeriod, waits: podAwaitingTermination},
	"Namespace": {delete: func(s *Registry, ctx context.Context, k *scheme.Kind, o meta.Object, rev int64) (meta.Object, int64, error) {
		return s.nsCleanup.markTerminating(ctx, k, o, rev)
	}, finishCreate: namespaceFinishCreate, prepareUpdate: namespacePrepareUpdate, waits: namespaceAwaitingFinalizers, statusLabels: true},
	"Service": {allocates: true, prepareUpdate: func(in, old meta.Object) {
		core.DropServiceTypeDependentFields(in.(*core.Service), old.(*core.Service))
	}},
	"Job": {finishCreate: jobFinishCreate},
	// A definition goes only once every object of its kind is gone
	// (apiserver/apiextensions takes the finalizer away then).
	"CustomResourceDefinition": {finishCreate: func(o meta.Object) {
		m := o.GetObjectMeta()
		if !m.HasFinalizer(apiextensions.CleanupFinalizer) {
			m.Finalizers = append(m.Finalizers, apiextensions.CleanupFinalizer)
		}
	}},
}

func strategyFor(k *scheme.Kind) strategy {
	if k.Custom != nil {
		return strategy{} // a custom kind named Pod is not a pod
	}
	return strategies[k.Kind]
}

// awaitingTermination reports whether the object still waits for someone
// to confirm it is stopped.
func (st strategy) awaitingTermination(o meta.Object) bool { return st.waits != nil && st.waits(o) }

// podFinishCreate: a new pod is Pending, with the QoS class of its
// resources; one with scheduling gates says so in its PodScheduled
// condition (kube-apiserver's pod strategy does the same at creation).
func podFinishCreate(o meta.Object) {
	p := o.(*core.Pod)
	p.Status.Phase = core.PodPending
	p.Status.QOSClass = core.PodQOSClass(&p.Spec)
	if len(p.Spec.SchedulingGates) > 0 {
		p.Status.Conditions = []core.PodCondition{{Type: core.PodScheduled, Status: meta.ConditionFalse, LastTransitionTime: meta.Now(),
			Reason: core.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates"}}
	}
}

// jobFinishCreate generates a Job's selector from its uid, as Kubernetes'
// Job strategy does (kubectl finds a Job's pods by it: logs job/X, describe
// job), and labels the pod template to match: the uid and the job's name,
// under both the batch.kubernetes.io/ names and the legacy ones. A Job
// that brings its own selector keeps it (Kubernetes refuses one unless
// manualSelector is true, which Kobune does not support).
func jobFinishCreate(o meta.Object) {
	j := o.(*batch.Job)
	if j.Spec.Selector != nil {
		return
	}
	j.Spec.Selector = &meta.LabelSelector{MatchLabels: map[string]string{batch.LabelControllerUID: j.UID}}
	j.Spec.Template.Labels = maps.Clone(j.Spec.Template.Labels)
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{batch.LabelControllerUID: j.UID, "controller-uid": j.UID, batch.LabelJobName: j.Name, "job-name": j.Name} {
		j.Spec.Template.Labels[k] = v
	}
}

// podGracePeriod is how long a pod's containers get to stop: the request's
// value, else the pod's terminationGracePeriodSeconds. Objects other than
// bound, running pods are deleted at once (grace 0), as in Kubernetes.
func podGracePeriod(o meta.Object, requested *int64) int64 {
	p, ok := o.(*core.Pod)
	if !ok || p.Spec.NodeName == "" || p.Status.Phase == core.PodSucceeded || p.Status.Phase == core.PodFailed {
		return 0
	}
	if requested != nil {
		return *requested
	}
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return core.DefaultTerminationGracePeriodSeconds
}

// podAwaitingTermination reports whether a pod still waits for its agent to
// confirm that its containers are gone.
func podAwaitingTermination(o meta.Object) bool {
	p, ok := o.(*core.Pod)
	return ok && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds > 0 && p.Spec.NodeName != ""
}

// namespaceFinishCreate gives a new namespace the spec finalizer
// "kubernetes" (beside any it brings), as Kubernetes' namespace strategy
// does on create — not as a default, which would put it back after the
// namespace's deletion took it away.
func namespaceFinishCreate(o meta.Object) {
	ns := o.(*core.Namespace)
	if !slices.Contains(ns.Spec.Finalizers, core.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, core.FinalizerKubernetes)
	}
}

// namespacePrepareUpdate keeps the stored spec: an update changes a
// namespace's metadata, its finalizers change through finalize.
func namespacePrepareUpdate(in, old meta.Object) {
	in.(*core.Namespace).Spec = old.(*core.Namespace).Spec
}

// namespaceAwaitingFinalizers: a namespace being deleted stays while its
// spec lists finalizers (the "kubernetes" one until its content is gone).
func namespaceAwaitingFinalizers(o meta.Object) bool {
	ns, ok := o.(*core.Namespace)
	return ok && ns.DeletionTimestamp != nil && len(ns.Spec.Finalizers) > 0
}
