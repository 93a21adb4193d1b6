// Package statefulset is kube-controller-manager's StatefulSet controller:
// pods with stable names <set>-0, <set>-1, ... (hostname the pod name,
// subdomain the serviceName). With podManagementPolicy OrderedReady (the
// default) it creates them one at a time in ordinal order, each only when
// every lower one is Running and Ready, and removes them from the highest
// ordinal down, one at a time; with Parallel it creates and removes them all
// at once. A changed template rolls out from the highest ordinal down to
// spec.updateStrategy.rollingUpdate.partition, one pod at a time, each
// replaced only when the others are ready (RollingUpdate), or only as pods
// are deleted (OnDelete). Each template the set has had is a
// ControllerRevision <set>-<hash> (controller.History; what kubectl rollout
// history and undo use); pods carry their revision's name in
// controller-revision-hash, and status.currentRevision and updateRevision
// name revisions, as in Kubernetes. Each pod gets its own claims from
// volumeClaimTemplates, named <template>-<set>-<ordinal> and made before
// the pod, so a pod that is deleted and made again (on whatever node)
// finds its data; persistentVolumeClaimRetentionPolicy deletes them with
// the set (whenDeleted: Delete, through an owner reference the garbage
// collector follows) or once a scale-down removed their pod (whenScaled:
// Delete); by default they stay.
package statefulset

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/reconcile"
	"github.com/kobune/kobune/controller"
)

// Name is the controller's name in logs and events.
const Name = "statefulset-controller"

// Labels on StatefulSet pods, with Kubernetes' names.
const (
	LabelPodName  = "statefulset.kubernetes.io/pod-name"
	LabelPodIndex = "apps.kubernetes.io/pod-index"
	RevisionLabel = "controller-revision-hash"
)

// Controller reconciles StatefulSets.
type Controller struct {
	client   *client.Client
	sets     *client.Informer[*apps.StatefulSet]
	pods     *client.Informer[*core.Pod]
	claims   *client.Informer[*core.PersistentVolumeClaim]
	history  controller.History
	recorder *client.AsyncRecorder
	now      func() time.Time
	// Loop is the controller's queue and workers.
	Loop *reconcile.Loop
}

// New returns the controller and registers its handlers.
func New(c *client.Client, inf *controller.Informers, recorder *client.AsyncRecorder) *Controller {
	sc := &Controller{client: c, sets: inf.StatefulSets, pods: inf.Pods, claims: inf.Claims, recorder: recorder, now: time.Now,
		history: controller.History{Client: c, Revisions: inf.Revisions}}
	sc.Loop = reconcile.NewLoop(Name, sc, 3)
	enqueue := func(s *apps.StatefulSet) { sc.Loop.Queue.Add(meta.Key(s)) }
	inf.StatefulSets.AddHandler(client.Handler[*apps.StatefulSet]{OnAdd: enqueue, OnUpdate: func(_, s *apps.StatefulSet) { enqueue(s) }})
	inf.Pods.AddHandler(controller.OwnedBy[*core.Pod]{Kind: "StatefulSet", Queue: sc.Loop.Queue, Owner: controller.CachedIn(inf.StatefulSets)}.Handler())
	return sc
}

// Reconcile implements reconcile.Reconciler. Each pass makes at most one
// ordered step (OrderedReady) and then waits for the pod events it causes:
// names are stable, so a pod that exists is never created twice.
func (sc *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	set, ok := sc.sets.GetByKey(key)
	if !ok || set.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	replicas := 1
	if set.Spec.Replicas != nil {
		replicas = int(*set.Spec.Replicas)
	}
	hash := controller.TemplateHash(&set.Spec.Template)
	byOrdinal := map[int]*core.Pod{}
	var extra []*core.Pod // pods with an ordinal at or above replicas
	for _, p := range sc.pods.ByIndex(controller.IndexByOwner, set.UID) {
		ord, ok := ordinal(set.Name, p.Name)
		if !ok {
			continue
		}
		if ord >= replicas {
			extra = append(extra, p)
		} else {
			byOrdinal[ord] = p
		}
	}
	live := map[string]bool{set.Status.CurrentRevision: true, set.Status.UpdateRevision: true}
	for _, p := range append(mapValues(byOrdinal), extra...) {
		live[p.Labels[RevisionLabel]] = true
	}
	rev, err := sc.history.Sync(ctx, set, &set.Spec.Template, hash, set.Spec.RevisionHistoryLimit, live)
	if err != nil {
		return reconcile.Result{}, err
	}
	parallel := set.Spec.PodManagementPolicy == "Parallel"
	err = sc.step(ctx, set, replicas, revision{rev, hash}, byOrdinal, extra, parallel)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := sc.deleteScaledClaims(ctx, set, replicas, byOrdinal, extra); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, sc.writeStatus(ctx, set, replicas, revision{rev, hash}, byOrdinal, extra)
}

// revision is the set's update revision: its name, which new pods carry in
// controller-revision-hash, and its template hash, which pods made before
// Kobune kept revisions carry there instead.
type revision struct{ name, hash string }

// has reports whether the pod runs this revision.
func (r revision) has(p *core.Pod) bool {
	v := p.Labels[RevisionLabel]
	return v == r.name || v == r.hash
}

func (sc *Controller) step(ctx context.Context, set *apps.StatefulSet, replicas int, rev revision, byOrdinal map[int]*core.Pod, extra []*core.Pod, parallel bool) error {
	pods := client.For[*core.Pod](sc.client)
	// Failed pods are replaced (deleted first; created when gone).
	for _, p := range byOrdinal {
		if p.Status.Phase == core.PodFailed && p.DeletionTimestamp == nil {
			return sc.delete(ctx, set, p)
		}
	}
	// Create the missing ordinals, lowest first; OrderedReady waits for
	// every lower pod to be Running and Ready.
	partition := 0
	if u := set.Spec.UpdateStrategy; u.Type != "OnDelete" && u.RollingUpdate != nil && u.RollingUpdate.Partition != nil {
		partition = int(*u.RollingUpdate.Partition)
	}
	for i := range replicas {
		p, ok := byOrdinal[i]
		if !ok {
			// Below the partition of a rolling update, a pod comes back at
			// the current revision, as Kubernetes' newVersionedStatefulSetPod.
			template, revName := &set.Spec.Template, rev.name
			if cur := set.Status.CurrentRevision; i < partition && cur != "" && cur != rev.name {
				if t, ok := sc.history.Template(set, cur); ok {
					template, revName = t, cur
				}
			}
			if err := sc.create(ctx, pods, set, i, template, revName); err != nil {
				return err
			}
			if !parallel {
				return nil
			}
			continue
		}
		if !parallel && (p.DeletionTimestamp != nil || !controller.IsReady(p)) {
			return nil // wait for it
		}
	}
	// Scale down from the highest ordinal.
	if len(extra) > 0 {
		if parallel {
			for _, p := range extra {
				if p.DeletionTimestamp == nil {
					if err := sc.delete(ctx, set, p); err != nil {
						return err
					}
				}
			}
			return nil
		}
		highest := extra[0]
		for _, p := range extra[1:] {
			if mustOrdinal(set.Name, p.Name) > mustOrdinal(set.Name, highest.Name) {
				highest = p
			}
		}
		if highest.DeletionTimestamp != nil {
			return nil // one at a time
		}
		// OrderedReady: a pod goes only once those below it are Running
		// and Ready; an unready one goes only if it is the lowest unready
		// pod (Kubernetes' processCondemned with its firstUnhealthyPod).
		// Every pod below the replicas is ready here (checked above).
		if !controller.IsReady(highest) {
			for _, p := range extra {
				if !controller.IsReady(p) && mustOrdinal(set.Name, p.Name) < mustOrdinal(set.Name, highest.Name) {
					return nil // wait for it
				}
			}
		}
		return sc.delete(ctx, set, highest)
	}
	// Rolling update: from the highest ordinal down to the partition, one
	// pod at a time, once every pod is ready.
	u := set.Spec.UpdateStrategy
	if u.Type == "OnDelete" {
		return nil
	}
	for i := replicas - 1; i >= partition; i-- {
		p := byOrdinal[i]
		if p == nil || p.DeletionTimestamp != nil || !controller.IsReady(p) {
			return nil
		}
		if !rev.has(p) {
			return sc.delete(ctx, set, p)
		}
	}
	return nil
}

func (sc *Controller) create(ctx context.Context, pods *client.Typed[*core.Pod], set *apps.StatefulSet, i int, template *core.PodTemplateSpec, revision string) error {
	t := *template
	t.Labels = maps.Clone(t.Labels)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	name := fmt.Sprintf("%s-%d", set.Name, i)
	t.Labels[LabelPodName], t.Labels[LabelPodIndex], t.Labels[RevisionLabel] = name, strconv.Itoa(i), revision
	p := controller.PodFromTemplate(&t, set.Namespace, "", set)
	p.Name, p.GenerateName = name, ""
	p.Spec.Hostname, p.Spec.Subdomain = name, set.Spec.ServiceName
	if err := sc.claimsFor(ctx, set, i, p); err != nil {
		return err
	}
	if _, err := pods.Create(ctx, p); err != nil {
		if client.IsAlreadyExists(err) {
			return nil // made by an earlier pass; the cache will show it
		}
		sc.recorder.Event(set, core.EventTypeWarning, "FailedCreate", fmt.Sprintf("create Pod %s in StatefulSet %s failed error: %s", name, set.Name, client.Message(err)))
		return fmt.Errorf("create pod %s: %w", name, err)
	}
	sc.recorder.Event(set, core.EventTypeNormal, "SuccessfulCreate", fmt.Sprintf("create Pod %s in StatefulSet %s successful", name, set.Name))
	return nil
}

// ClaimName is the claim of template for ordinal i of set.
func ClaimName(template string, set *apps.StatefulSet, i int) string {
	return fmt.Sprintf("%s-%s-%d", template, set.Name, i)
}

// claimsFor makes the claims of ordinal i that do not exist yet and gives
// the pod a volume for each (replacing a template volume of the same
// name, as Kubernetes does).
func (sc *Controller) claimsFor(ctx context.Context, set *apps.StatefulSet, i int, p *core.Pod) error {
	claims := client.For[*core.PersistentVolumeClaim](sc.client)
	deleteWithSet := set.Spec.PersistentVolumeClaimRetentionPolicy != nil && set.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "Delete"
	for _, t := range set.Spec.VolumeClaimTemplates {
		name := ClaimName(t.Name, set, i)
		if _, ok := sc.claims.Get(set.Namespace, name); !ok {
			c := &core.PersistentVolumeClaim{ObjectMeta: meta.ObjectMeta{Namespace: set.Namespace, Name: name,
				Labels: maps.Clone(t.Labels), Annotations: maps.Clone(t.Annotations)}, Spec: t.Spec}
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			if set.Spec.Selector != nil {
				maps.Copy(c.Labels, set.Spec.Selector.MatchLabels) // as Kubernetes: the set's selector labels
			}
			if deleteWithSet {
				c.OwnerReferences = []meta.OwnerReference{controller.OwnerRef(set)}
			}
			if _, err := claims.Create(ctx, c); err != nil && !client.IsAlreadyExists(err) {
				sc.recorder.Event(set, core.EventTypeWarning, "FailedCreate", fmt.Sprintf("create Claim %s for Pod %s in StatefulSet %s failed error: %s", name, p.Name, set.Name, client.Message(err)))
				return fmt.Errorf("create claim %s: %w", name, err)
			} else if err == nil {
				sc.recorder.Event(set, core.EventTypeNormal, "SuccessfulCreate", fmt.Sprintf("create Claim %s Pod %s in StatefulSet %s success", name, p.Name, set.Name))
			}
		}
		vol := core.Volume{Name: t.Name, VolumeSource: core.VolumeSource{PersistentVolumeClaim: &core.PersistentVolumeClaimVolumeSource{ClaimName: name}}}
		replaced := false
		for j := range p.Spec.Volumes {
			if p.Spec.Volumes[j].Name == t.Name {
				p.Spec.Volumes[j], replaced = vol, true
			}
		}
		if !replaced {
			p.Spec.Volumes = append(p.Spec.Volumes, vol)
		}
	}
	return nil
}

// deleteScaledClaims deletes, under whenScaled: Delete, the claims of the
// ordinals at or above replicas whose pod is gone.
func (sc *Controller) deleteScaledClaims(ctx context.Context, set *apps.StatefulSet, replicas int, byOrdinal map[int]*core.Pod, extra []*core.Pod) error {
	r := set.Spec.PersistentVolumeClaimRetentionPolicy
	if r == nil || r.WhenScaled != "Delete" || len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	alive := map[int]bool{}
	for i := range byOrdinal {
		alive[i] = true
	}
	for _, p := range extra {
		alive[mustOrdinal(set.Name, p.Name)] = true
	}
	for _, c := range sc.claims.ByIndex(client.IndexNamespace, set.Namespace) {
		for _, t := range set.Spec.VolumeClaimTemplates {
			rest, ok := strings.CutPrefix(c.Name, t.Name+"-"+set.Name+"-")
			i, err := strconv.Atoi(rest)
			if !ok || err != nil || i < replicas || alive[i] || c.DeletionTimestamp != nil {
				continue
			}
			err = client.For[*core.PersistentVolumeClaim](sc.client).Delete(ctx, c.Namespace, c.Name, client.DeleteOptions{UID: c.UID})
			if err != nil && !client.IsNotFound(err) {
				return fmt.Errorf("delete claim %s: %w", c.Name, err)
			}
			sc.recorder.Event(set, core.EventTypeNormal, "SuccessfulDelete", fmt.Sprintf("delete Claim %s in StatefulSet %s successful", c.Name, set.Name))
		}
	}
	return nil
}

func (sc *Controller) delete(ctx context.Context, set *apps.StatefulSet, p *core.Pod) error {
	err := client.For[*core.Pod](sc.client).Delete(ctx, p.Namespace, p.Name, client.DeleteOptions{UID: p.UID})
	if err != nil && !client.IsNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	sc.recorder.Event(set, core.EventTypeNormal, "SuccessfulDelete", fmt.Sprintf("delete Pod %s in StatefulSet %s successful", p.Name, set.Name))
	return nil
}

// ordinal reads N from "<set>-N".
func ordinal(set, pod string) (int, bool) {
	rest, ok := strings.CutPrefix(pod, set+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

func mustOrdinal(set, pod string) int {
	n, _ := ordinal(set, pod)
	return n
}

func (sc *Controller) writeStatus(ctx context.Context, set *apps.StatefulSet, replicas int, rev revision, byOrdinal map[int]*core.Pod, extra []*core.Pod) error {
	st := apps.StatefulSetStatus{ObservedGeneration: set.Generation, UpdateRevision: rev.name, CurrentRevision: set.Status.CurrentRevision,
		CollisionCount: set.Status.CollisionCount, Conditions: set.Status.Conditions}
	if st.CurrentRevision == rev.hash { // written before Kobune kept revisions
		st.CurrentRevision = rev.name
	}
	for _, p := range append(mapValues(byOrdinal), extra...) {
		if p.DeletionTimestamp != nil || p.Status.Phase == core.PodFailed || p.Status.Phase == core.PodSucceeded {
			continue
		}
		st.Replicas++
		if controller.IsReady(p) {
			st.ReadyReplicas++
		}
		if ok, _ := controller.IsAvailable(p, set.Spec.MinReadySeconds, sc.now()); ok {
			st.AvailableReplicas++
		}
		if rev.has(p) {
			st.UpdatedReplicas++
		}
	}
	if st.CurrentRevision == "" || (st.UpdatedReplicas == int32(replicas) && st.ReadyReplicas == int32(replicas)) {
		st.CurrentRevision = rev.name // the update is done: it is the current revision now
	}
	if st.CurrentRevision == rev.name {
		st.CurrentReplicas = st.UpdatedReplicas
	} else {
		st.CurrentReplicas = st.Replicas - st.UpdatedReplicas
	}
	o := set.Status
	if o.ObservedGeneration == st.ObservedGeneration && o.Replicas == st.Replicas && o.ReadyReplicas == st.ReadyReplicas && o.AvailableReplicas == st.AvailableReplicas &&
		o.UpdatedReplicas == st.UpdatedReplicas && o.CurrentReplicas == st.CurrentReplicas && o.UpdateRevision == st.UpdateRevision && o.CurrentRevision == st.CurrentRevision {
		return nil
	}
	updated := *set
	updated.Status = st
	_, err := controller.WriteStatus(ctx, sc.client, &updated)
	return err
}

func mapValues(m map[int]*core.Pod) []*core.Pod {
	out := make([]*core.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	return out
}
