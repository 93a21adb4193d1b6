package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// Recorder writes Events about objects, as client-go's EventRecorder does:
// `kobectl describe` shows them under the object.
type Recorder struct {
	Client    *Client
	Component string // e.g. "default-scheduler"
}

// Event records that reason happened to obj; typ is Normal or Warning.
// Failing to record is not an error for the caller: it returns it only so
// tests can see it.
func (r *Recorder) Event(ctx context.Context, obj meta.Object, typ, reason, message string) error {
	m := obj.GetObjectMeta()
	kind := obj.GetTypeMeta().Kind
	apiVersion := obj.GetTypeMeta().APIVersion
	if k, err := scheme.KindOf(obj); err == nil {
		kind, apiVersion = k.Kind, k.APIVersion
	}
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	ns := m.Namespace
	if ns == "" {
		ns = "default"
	}
	now := meta.Now()
	ev := &core.Event{
		ObjectMeta:     meta.ObjectMeta{Name: m.Name + "." + hex.EncodeToString(suffix), Namespace: ns},
		InvolvedObject: core.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: m.Namespace, Name: m.Name, UID: m.UID},
		Reason:         reason, Message: message, Type: typ, Count: 1,
		Source:         core.EventSource{Component: r.Component},
		FirstTimestamp: now, LastTimestamp: now, ReportingController: r.Component,
	}
	_, err := For[*core.Event](r.Client).Create(ctx, ev)
	return err
}
