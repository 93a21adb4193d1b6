package controller

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// PodFromTemplate is a new pod for an owner: the template's labels,
// annotations and spec, a name generated from prefix, and a controller
// reference to the owner that blocks the owner's foreground deletion.
func PodFromTemplate(t *core.PodTemplateSpec, namespace, prefix string, owner meta.Object) *core.Pod {
	p := &core.Pod{ObjectMeta: meta.ObjectMeta{
		GenerateName:    prefix,
		Namespace:       namespace,
		Labels:          maps.Clone(t.Labels),
		Annotations:     maps.Clone(t.Annotations),
		OwnerReferences: []meta.OwnerReference{ControllerRef(owner)},
	}}
	p.Spec = t.Spec
	return p
}

// OwnerRef is a reference to o, with o's kind and apiVersion from the
// scheme (never typed in by hand at the call site).
func OwnerRef(o meta.Object) meta.OwnerReference {
	m := o.GetObjectMeta()
	k, err := scheme.KindOf(o)
	if err != nil {
		panic(err) // a programming error: o is not an API kind
	}
	return meta.OwnerReference{APIVersion: k.APIVersion, Kind: k.Kind, Name: m.Name, UID: m.UID}
}

// IsActive reports whether a pod counts toward its owner's replicas: not
// finished and not being deleted.
func IsActive(p *core.Pod) bool {
	return p.Status.Phase != core.PodSucceeded && p.Status.Phase != core.PodFailed && p.DeletionTimestamp == nil
}

// IsReady reports whether the pod's Ready condition is True.
func IsReady(p *core.Pod) bool {
	return readySince(p) != nil
}

func readySince(p *core.Pod) *meta.Time {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type == core.PodReady && c.Status == meta.ConditionTrue {
			return &c.LastTransitionTime
		}
	}
	return nil
}

// IsAvailable reports whether the pod has been ready for minReadySeconds
// at now, and if not yet, how long until it will be (0 when never).
func IsAvailable(p *core.Pod, minReadySeconds int32, now time.Time) (bool, time.Duration) {
	since := readySince(p)
	if since == nil {
		return false, 0
	}
	if minReadySeconds == 0 {
		return true, 0
	}
	at := since.Add(time.Duration(minReadySeconds) * time.Second)
	if !now.Before(at) {
		return true, 0
	}
	return false, at.Sub(now)
}

// TemplateHash names a pod template by a hash of its JSON (the
// controller-revision-hash of DaemonSet and StatefulSet pods).
func TemplateHash(t *core.PodTemplateSpec) string {
	b, _ := json.Marshal(t)
	h := fnv.New32a()
	h.Write(b)
	return fmt.Sprintf("%08x", h.Sum32())
}
