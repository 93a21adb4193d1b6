package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"strconv"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/controller"
)

// TemplateHash names a pod template: a short hash of its JSON, written with
// Kubernetes' alphabet of consonants and digits (no words by accident).
func TemplateHash(t *core.PodTemplateSpec, collisionCount int32) string {
	b, _ := json.Marshal(t)
	h := fnv.New32a()
	h.Write(b)
	if collisionCount > 0 {
		fmt.Fprint(h, collisionCount)
	}
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	v := h.Sum32()
	out := make([]byte, 0, 10)
	for v > 0 {
		out = append(out, alphabet[v%uint32(len(alphabet))])
		v /= uint32(len(alphabet))
	}
	return string(out)
}

// EqualIgnoreHash compares two pod templates, ignoring the
// pod-template-hash label the controller adds to its ReplicaSets'.
func EqualIgnoreHash(a, b *core.PodTemplateSpec) bool {
	strip := func(t *core.PodTemplateSpec) []byte {
		c := *t
		c.Labels = maps.Clone(t.Labels)
		delete(c.Labels, apps.PodTemplateHashLabel)
		if len(c.Labels) == 0 {
			c.Labels = nil
		}
		out, _ := json.Marshal(c)
		return out
	}
	return string(strip(a)) == string(strip(b))
}

// rollout is one reconcile's view of a Deployment and its ReplicaSets.
// Scaling writes update the ReplicaSets here too, so each step of a pass
// sees the previous one's result.
type rollout struct {
	dc      *Controller
	d       *apps.Deployment
	all     []*apps.ReplicaSet
	newRS   *apps.ReplicaSet
	old     []*apps.ReplicaSet // oldest first
	created bool               // this pass created the new ReplicaSet
}

// split finds the ReplicaSet with the Deployment's template and the old ones.
func (r *rollout) split() {
	sort.SliceStable(r.all, func(i, j int) bool {
		a, b := r.all[i], r.all[j]
		if !a.CreationTimestamp.Equal(b.CreationTimestamp.Time) {
			return a.CreationTimestamp.Before(b.CreationTimestamp.Time)
		}
		return a.Name < b.Name
	})
	r.newRS, r.old = nil, nil
	for _, rs := range r.all {
		if r.newRS == nil && EqualIgnoreHash(&rs.Spec.Template, &r.d.Spec.Template) {
			r.newRS = rs
			continue
		}
		r.old = append(r.old, rs)
	}
}

func (r *rollout) maxOldRevision() int64 {
	var top int64
	for _, rs := range r.old {
		top = max(top, apps.Revision(rs))
	}
	return top
}

// ensureNew creates the new ReplicaSet if there is none, or brings its
// revision up to date (a rollback makes an old one new again), and
// records the revision on the Deployment.
func (r *rollout) ensureNew(ctx context.Context) error {
	revision := strconv.FormatInt(r.maxOldRevision()+1, 10)
	rsClient := client.For[*apps.ReplicaSet](r.dc.client)
	if r.newRS == nil {
		rs, err := r.createNew(ctx, revision)
		if err != nil {
			return err
		}
		r.newRS, r.created = rs, true
		r.all = append(r.all, rs)
	} else if r.newRS.Annotations[apps.RevisionAnnotation] != revision && apps.Revision(r.newRS) <= r.maxOldRevision() {
		updated := *r.newRS
		updated.Annotations = maps.Clone(r.newRS.Annotations)
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[apps.RevisionAnnotation] = revision
		if cause, ok := r.d.Annotations[apps.ChangeCauseAnnotation]; ok {
			updated.Annotations[apps.ChangeCauseAnnotation] = cause
		}
		rs, err := rsClient.Update(ctx, &updated)
		if err != nil {
			return fmt.Errorf("update revision of %s: %w", r.newRS.Name, err)
		}
		r.dc.writes.Wrote(meta.Key(r.d), rs)
		r.replace(rs)
	}
	if r.d.Annotations[apps.RevisionAnnotation] != r.newRS.Annotations[apps.RevisionAnnotation] {
		updated := *r.d
		updated.Annotations = maps.Clone(r.d.Annotations)
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[apps.RevisionAnnotation] = r.newRS.Annotations[apps.RevisionAnnotation]
		d, err := client.For[*apps.Deployment](r.dc.client).Update(ctx, &updated)
		if err != nil {
			return err // a conflict: the next pass sees the newer Deployment
		}
		r.d = d
	}
	return nil
}

// createNew creates the ReplicaSet for the Deployment's template:
// <deployment>-<hash>, with the hash as an extra label and selector term.
func (r *rollout) createNew(ctx context.Context, revision string) (*apps.ReplicaSet, error) {
	d := r.d
	var collisions int32
	if d.Status.CollisionCount != nil {
		collisions = *d.Status.CollisionCount
	}
	hash := TemplateHash(&d.Spec.Template, collisions)
	tmpl := d.Spec.Template
	tmpl.Labels = maps.Clone(d.Spec.Template.Labels)
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[apps.PodTemplateHashLabel] = hash
	sel := *d.Spec.Selector
	sel.MatchLabels = maps.Clone(d.Spec.Selector.MatchLabels)
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[apps.PodTemplateHashLabel] = hash
	owner := controller.ControllerRef(d)
	annotations := map[string]string{apps.RevisionAnnotation: revision}
	for k, v := range d.Annotations {
		if k != apps.RevisionAnnotation && k != "kubectl.kubernetes.io/last-applied-configuration" {
			annotations[k] = v
		}
	}
	zero := int32(0)
	rs := &apps.ReplicaSet{
		ObjectMeta: meta.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: tmpl.Labels,
			Annotations: annotations, OwnerReferences: []meta.OwnerReference{owner}},
		Spec: apps.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: &sel, Template: tmpl},
	}
	created, err := client.For[*apps.ReplicaSet](r.dc.client).Create(ctx, rs)
	if err == nil {
		r.dc.writes.Wrote(meta.Key(d), created)
		return created, nil
	}
	if !client.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create ReplicaSet %s: %w", rs.Name, err)
	}
	// Ours already, made by an earlier pass the cache has not shown yet?
	existing, gerr := client.For[*apps.ReplicaSet](r.dc.client).Get(ctx, rs.Namespace, rs.Name)
	if gerr != nil {
		return nil, fmt.Errorf("create ReplicaSet %s: %w", rs.Name, err)
	}
	if ref := meta.ControllerOf(existing); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&existing.Spec.Template, &d.Spec.Template) {
		return existing, nil
	}
	// A ReplicaSet of that name with another template (a hash collision, or
	// one not ours): count the collision so the next hash differs.
	updated := *d
	n := collisions + 1
	updated.Status.CollisionCount = &n
	if _, err := client.For[*apps.Deployment](r.dc.client).UpdateStatus(ctx, &updated); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("ReplicaSet %s exists with another template; retrying with collisionCount %d", rs.Name, n)
}

func (r *rollout) replace(rs *apps.ReplicaSet) {
	for i, x := range r.all {
		if x.UID == rs.UID {
			r.all[i] = rs
		}
	}
	for i, x := range r.old {
		if x.UID == rs.UID {
			r.old[i] = rs
		}
	}
	if r.newRS != nil && r.newRS.UID == rs.UID {
		r.newRS = rs
	}
}

// scale sets a ReplicaSet's replicas, with a ScalingReplicaSet event.
func (r *rollout) scale(ctx context.Context, rs *apps.ReplicaSet, to int32) error {
	from := replicas(rs)
	if from == to && rs.Annotations[apps.DesiredReplicasAnnotation] == strconv.Itoa(int(deploymentReplicas(r.d))) {
		return nil
	}
	updated := *rs
	updated.Spec.Replicas = &to
	updated.Annotations = maps.Clone(rs.Annotations)
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	maxSurge, _ := r.fenceposts()
	updated.Annotations[apps.DesiredReplicasAnnotation] = strconv.Itoa(int(deploymentReplicas(r.d)))
	updated.Annotations[apps.MaxReplicasAnnotation] = strconv.Itoa(int(deploymentReplicas(r.d) + maxSurge))
	scaled, err := client.For[*apps.ReplicaSet](r.dc.client).Update(ctx, &updated)
	if err != nil {
		return fmt.Errorf("scale %s to %d: %w", rs.Name, to, err)
	}
	r.dc.writes.Wrote(meta.Key(r.d), scaled)
	r.replace(scaled)
	if from != to {
		dir := "up"
		if to < from {
			dir = "down"
		}
		r.dc.recorder.Event(r.d, core.EventTypeNormal, "ScalingReplicaSet", fmt.Sprintf("Scaled %s replica set %s from %d to %d", dir, rs.Name, from, to))
	}
	return nil
}

func replicas(rs *apps.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func deploymentReplicas(d *apps.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// cleanupHistory deletes the oldest old ReplicaSets with no pods beyond
// revisionHistoryLimit (default 10).
func (r *rollout) cleanupHistory(ctx context.Context) error {
	limit := int32(10)
	if r.d.Spec.RevisionHistoryLimit != nil {
		limit = *r.d.Spec.RevisionHistoryLimit
	}
	var idle []*apps.ReplicaSet
	for _, rs := range r.old {
		if replicas(rs) == 0 && rs.Status.Replicas == 0 && rs.DeletionTimestamp == nil {
			idle = append(idle, rs)
		}
	}
	sort.SliceStable(idle, func(i, j int) bool { return apps.Revision(idle[i]) < apps.Revision(idle[j]) })
	for i := 0; i < len(idle)-int(limit); i++ {
		err := client.For[*apps.ReplicaSet](r.dc.client).Delete(ctx, idle[i].Namespace, idle[i].Name, client.DeleteOptions{UID: idle[i].UID})
		if err != nil && !client.IsNotFound(err) {
			return fmt.Errorf("delete old ReplicaSet %s: %w", idle[i].Name, err)
		}
	}
	return nil
}
