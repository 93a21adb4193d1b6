package admission

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/networking"
)

// IngressClassLister lists the IngressClasses, for DefaultIngressClass.
type IngressClassLister interface {
	IngressClasses(ctx context.Context) ([]*networking.IngressClass, error)
}

// DefaultIngressClass gives a new Ingress that names no class the default
// one — annotated ingressclass.kubernetes.io/is-default-class: "true", the
// newest if several are (as DefaultStorageClass chooses) — as Kubernetes'
// admission plugin of that name does. With no default class the Ingress
// keeps no class.
type DefaultIngressClass struct {
	Classes IngressClassLister
}

// Name implements Mutator.
func (DefaultIngressClass) Name() string { return "DefaultIngressClass" }

// Admit implements Mutator.
func (d DefaultIngressClass) Admit(ctx context.Context, a *Attributes) error {
	in, ok := a.Object.(*networking.Ingress)
	if !ok || a.Operation != Create || in.Spec.IngressClassName != nil || d.Classes == nil {
		return nil
	}
	classes, err := d.Classes.IngressClasses(ctx)
	if err != nil {
		return status.Errorf(codes.Unavailable, "look up the default ingress class: %v", err)
	}
	if def, ok := newestDefault(classes, networking.DefaultClassAnnotation); ok {
		name := def.Name
		in.Spec.IngressClassName = &name
	}
	return nil
}

// newestDefault is the newest of the items annotated annotation: "true"
// (by name when two are as new), the default of a class kind.
func newestDefault[T meta.Object](items []T, annotation string) (T, bool) {
	var def T
	found := false
	for _, c := range items {
		m, d := c.GetObjectMeta(), def
		if m.Annotations[annotation] != "true" {
			continue
		}
		if !found || m.CreationTimestamp.After(d.GetObjectMeta().CreationTimestamp.Time) ||
			(m.CreationTimestamp.Equal(d.GetObjectMeta().CreationTimestamp.Time) && m.Name < d.GetObjectMeta().Name) {
			def, found = c, true
		}
	}
	return def, found
}
