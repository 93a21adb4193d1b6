package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// rolloutRevision is one entry of a rollout's history: the pod template
// and the change cause recorded with it.
type rolloutRevision struct {
	template core.PodTemplateSpec
	cause    string
	// data is a ControllerRevision's strategic merge patch (StatefulSets
	// and DaemonSets).
	data json.RawMessage
}

// rolloutRevisions is the history of a Deployment (its ReplicaSets,
// numbered by their revision annotation) or of a StatefulSet or
// DaemonSet (its ControllerRevisions), by revision number.
func rolloutRevisions(ctx context.Context, c *client.Client, k *scheme.Kind, ns, name string) (map[int64]rolloutRevision, error) {
	out := map[int64]rolloutRevision{}
	if k.Kind == "Deployment" {
		rss, err := revisions(ctx, c, ns, name)
		for n, rs := range rss {
			out[n] = rolloutRevision{template: withoutHash(rs.Spec.Template), cause: rs.Annotations[apps.ChangeCauseAnnotation]}
		}
		return out, err
	}
	owner, _, err := revisionOwner(ctx, c, k, ns, name)
	if err != nil {
		return nil, err
	}
	revs, _, err := client.For[*apps.ControllerRevision](c).List(ctx, ns, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, r := range revs {
		if ref := meta.ControllerOf(r); ref == nil || ref.UID != owner.GetObjectMeta().UID {
			continue
		}
		t, err := revisionTemplate(r.Data)
		if err != nil {
			return nil, fmt.Errorf("controllerrevision %s: %w", r.Name, err)
		}
		out[r.Revision] = rolloutRevision{template: t, cause: r.Annotations[apps.ChangeCauseAnnotation], data: r.Data}
	}
	return out, nil
}

// revisionOwner reads the StatefulSet or DaemonSet and its pod template.
func revisionOwner(ctx context.Context, c *client.Client, k *scheme.Kind, ns, name string) (meta.Object, *core.PodTemplateSpec, error) {
	switch k.Kind {
	case "StatefulSet":
		s, err := client.For[*apps.StatefulSet](c).Get(ctx, ns, name)
		if err != nil {
			return nil, nil, err
		}
		return s, &s.Spec.Template, nil
	case "DaemonSet":
		d, err := client.For[*apps.DaemonSet](c).Get(ctx, ns, name)
		if err != nil {
			return nil, nil, err
		}
		return d, &d.Spec.Template, nil
	}
	return nil, nil, fmt.Errorf("%s keep no ControllerRevisions", k.Resource)
}

// revisionTemplate reads the template out of a ControllerRevision's data
// ({"spec":{"template":{...}}}).
func revisionTemplate(data json.RawMessage) (core.PodTemplateSpec, error) {
	var d struct {
		Spec struct {
			Template core.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	err := json.Unmarshal(data, &d)
	return d.Spec.Template, err
}

// rolloutUndoRevision rolls a StatefulSet or DaemonSet back as kubectl
// does: the chosen ControllerRevision's data is applied to it as a
// strategic merge patch, and the controller rolls the pods out.
func rolloutUndoRevision(ctx context.Context, o *cmdutil.Options, c *client.Client, k *scheme.Kind, name string, to int64) error {
	ns := o.NamespaceOrDefault()
	what := cmdutil.Qualified(k.Resource, k.APIVersion) + "/" + name
	revs, err := rolloutRevisions(ctx, c, k, ns, name)
	if err != nil {
		return err
	}
	order := sortedRevisions(revs)
	if to == 0 {
		if len(order) < 2 {
			return fmt.Errorf("no last revision to roll back to")
		}
		to = order[len(order)-2]
	}
	target, ok := revs[to]
	if !ok {
		return fmt.Errorf("unable to find specified revision %d in history", to)
	}
	_, current, err := revisionOwner(ctx, c, k, ns, name)
	if err != nil {
		return err
	}
	if reflect.DeepEqual(normalized(current), normalized(&target.template)) {
		fmt.Fprintf(o.Out, "%s skipped rollback (current template already matches revision %d)\n", what, to)
		return nil
	}
	if _, err := c.Resource(k).Patch(ctx, ns, name, client.StrategicMergePatch, target.data, client.PatchOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "%s rolled back\n", what)
	return nil
}

// normalized is a template as JSON would compare it (empty and absent
// the same).
func normalized(t *core.PodTemplateSpec) any {
	b, _ := json.Marshal(t)
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}
