package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// HashLabel is the label a ControllerRevision carries with its template's
// hash (Kubernetes' controller.kubernetes.io/hash).
const HashLabel = "controller.kubernetes.io/hash"

// History keeps the ControllerRevisions of DaemonSets and StatefulSets:
// one per pod template the owner has had, numbered in the order the
// templates were (last) current, as Kubernetes' pkg/controller/history
// does. They are what `kubectl rollout history` lists and what `rollout
// undo` applies: each revision's data is a strategic merge patch that
// puts its template back.
type History struct {
	Client    *client.Client
	Revisions *client.Informer[*apps.ControllerRevision]
	// Label is the label a revision carries its hash in: HashLabel by
	// default (a StatefulSet's, Kubernetes' history package), a
	// DaemonSet's controller-revision-hash (as its pods).
	Label string
}

// RevisionName is the name of owner's revision of the template with this
// hash.
func RevisionName(owner, hash string) string { return owner + "-" + hash }

// Owned are the revisions owner controls, lowest revision first.
func (h History) Owned(owner meta.Object) []*apps.ControllerRevision {
	var out []*apps.ControllerRevision
	for _, r := range h.Revisions.ByIndex(IndexByOwner, owner.GetObjectMeta().UID) {
		if ref := meta.ControllerOf(r); ref != nil && ref.UID == owner.GetObjectMeta().UID {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

// Sync makes the revision of template (with this hash) exist and be the
// highest: a new template gets a new revision, one the owner had before
// (a rollback) has its number raised to the top. Then it deletes the
// oldest revisions beyond limit (revisionHistoryLimit) of those no pod
// and no status names (live, by name). It returns the revision's name.
func (h History) Sync(ctx context.Context, owner meta.Object, template *core.PodTemplateSpec, hash string, limit *int32, live map[string]bool) (string, error) {
	om := owner.GetObjectMeta()
	name := RevisionName(om.Name, hash)
	revs := h.Owned(owner)
	top := int64(0)
	var this *apps.ControllerRevision
	for _, r := range revs {
		top = max(top, r.Revision)
		if r.Name == name {
			this = r
		}
	}
	typed := client.For[*apps.ControllerRevision](h.Client)
	switch {
	case this == nil:
		data, err := RevisionData(template)
		if err != nil {
			return "", err
		}
		labels := maps.Clone(template.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		key := h.Label
		if key == "" {
			key = HashLabel
		}
		labels[key] = hash
		r := &apps.ControllerRevision{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: om.Namespace, Labels: labels,
			Annotations: maps.Clone(om.Annotations), OwnerReferences: []meta.OwnerReference{ControllerRef(owner)}},
			Data: data, Revision: top + 1}
		if _, err := typed.Create(ctx, r); err != nil {
			if !client.IsAlreadyExists(err) {
				return "", fmt.Errorf("create revision %s: %w", name, err)
			}
			// Made by an earlier pass the cache does not show yet, or
			// left by a deleted owner of the same name (which the garbage
			// collector removes): ours is checked on the next pass.
			got, gerr := typed.Get(ctx, om.Namespace, name)
			if gerr != nil {
				return "", gerr
			}
			if ref := meta.ControllerOf(got); ref == nil || ref.UID != om.UID {
				return "", fmt.Errorf("revision %s exists and belongs to another owner; waiting for it to go", name)
			}
		}
	case this.Revision < top:
		bumped := *this
		bumped.Revision = top + 1
		if _, err := typed.Update(ctx, &bumped); err != nil {
			return "", fmt.Errorf("renumber revision %s: %w", name, err)
		}
	}
	return name, h.trim(ctx, revs, name, limit, live)
}

// trim deletes the oldest revisions beyond limit that are not live.
func (h History) trim(ctx context.Context, revs []*apps.ControllerRevision, current string, limit *int32, live map[string]bool) error {
	keep := int32(10)
	if limit != nil {
		keep = *limit
	}
	var old []*apps.ControllerRevision
	for _, r := range revs {
		if r.Name != current && !live[r.Name] && r.DeletionTimestamp == nil {
			old = append(old, r)
		}
	}
	for i := 0; i < len(old)-int(keep); i++ {
		err := client.For[*apps.ControllerRevision](h.Client).Delete(ctx, old[i].Namespace, old[i].Name, client.DeleteOptions{UID: old[i].UID})
		if err != nil && !client.IsNotFound(err) {
			return fmt.Errorf("delete revision %s: %w", old[i].Name, err)
		}
	}
	return nil
}

// Template is the pod template of owner's revision name (read from its
// data), and whether the owner has that revision.
func (h History) Template(owner meta.Object, name string) (*core.PodTemplateSpec, bool) {
	for _, r := range h.Owned(owner) {
		if r.Name != name {
			continue
		}
		var data struct {
			Spec struct {
				Template core.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(r.Data, &data); err != nil {
			return nil, false
		}
		return &data.Spec.Template, true
	}
	return nil, false
}

// RevisionData is a revision's data: {"spec":{"template":{...,
// "$patch":"replace"}}}, the strategic merge patch that makes a
// DaemonSet's or StatefulSet's template this one again, in Kubernetes'
// shape.
func RevisionData(template *core.PodTemplateSpec) (json.RawMessage, error) {
	b, err := json.Marshal(template)
	if err != nil {
		return nil, err
	}
	var t map[string]any
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, err
	}
	t["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
}
