package admission

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/validation"
)

// Operation is the kind of write being admitted.
type Operation string

// Operations.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
)

// Attributes describe one write.
type Attributes struct {
	Operation Operation
	Kind      *scheme.Kind
	Object    meta.Object
	OldObject meta.Object // nil on create
}

// Mutator may change the object.
type Mutator interface {
	Name() string
	Admit(ctx context.Context, a *Attributes) error
}

// Validator may refuse the object, never change it.
type Validator interface {
	Name() string
	Validate(ctx context.Context, a *Attributes) error
}

// DeleteValidator is a Validator that also judges deletes (of the stored
// object), as NodeRestriction does.
type DeleteValidator interface {
	ValidateDelete(ctx context.Context, k *scheme.Kind, stored meta.Object) error
}

// AdmitDelete runs the validators that judge deletes.
func (c *Chain) AdmitDelete(ctx context.Context, k *scheme.Kind, stored meta.Object) error {
	for _, v := range c.Validators {
		if d, ok := v.(DeleteValidator); ok {
			if err := d.ValidateDelete(ctx, k, stored); err != nil {
				return err
			}
		}
	}
	return nil
}

// StatusValidator is a Validator that also judges status updates (which
// the rest of the chain leaves alone: status is the writer's business), as
// NodeRestriction does.
type StatusValidator interface {
	ValidateStatus(ctx context.Context, a *Attributes) error
}

// AdmitStatus runs the validators that judge status updates.
func (c *Chain) AdmitStatus(ctx context.Context, a *Attributes) error {
	for _, v := range c.Validators {
		if sv, ok := v.(StatusValidator); ok {
			if err := sv.ValidateStatus(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// Chain runs mutators then validators, stopping at the first refusal.
type Chain struct {
	Mutators   []Mutator
	Validators []Validator
}

// NamespaceGetter tells whether a namespace exists and whether it is being
// deleted; the API server answers it from a cache kept by a watch.
type NamespaceGetter interface {
	NamespacePhase(ctx context.Context, name string) (phase string, found bool, err error)
}

// NewChain builds the default chain.
//
//	mutating:   Defaulting          — fill what Kubernetes defaults (restartPolicy, replicas, ...),
//	                                  first, so that validation sees the complete object
//	            Priority            — a pod's priorityClassName becomes spec.priority
//	            DefaultTolerationSeconds — pods tolerate not-ready/unreachable nodes for a while
//	            StorageObjectInUseProtection — new claims and volumes get their protection finalizer
//	            DefaultStorageClass — a new claim that names no class gets the default one
//	            (DefaultIngressClass and CertificateSigningRequest are added by the server)
//	validating: NamespaceLifecycle  — the namespace must exist and not be terminating
//	            Validation          — the kind's rules, with field paths
func NewChain(namespaces NamespaceGetter, classes PriorityClassGetter, defaultTolerationSeconds int64, storageClasses StorageClassLister) *Chain {
	return &Chain{
		Mutators: []Mutator{Defaulting{}, Priority{Classes: classes}, DefaultTolerationSeconds{Seconds: defaultTolerationSeconds}, StorageObjectInUseProtection{},
			DefaultStorageClass{Classes: storageClasses}},
		Validators: []Validator{NamespaceLifecycle{Namespaces: namespaces}, Validation{}, PersistentVolumeClaimResize{Classes: storageClasses}},
	}
}

// Admit runs the chain.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	for _, m := range c.Mutators {
		if err := m.Admit(ctx, a); err != nil {
			return err
		}
	}
	for _, v := range c.Validators {
		if err := v.Validate(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Defaulting applies the kind's defaults.
type Defaulting struct{}

// Name implements Mutator.
func (Defaulting) Name() string { return "Defaulting" }

// Admit implements Mutator.
func (Defaulting) Admit(_ context.Context, a *Attributes) error {
	if a.Kind.Default != nil {
		a.Kind.Default(a.Object)
	}
	return nil
}

// NamespaceLifecycle refuses objects in namespaces that do not exist or are
// being deleted.
type NamespaceLifecycle struct {
	Namespaces NamespaceGetter
}

// Name implements Validator.
func (NamespaceLifecycle) Name() string { return "NamespaceLifecycle" }

// Validate implements Validator.
func (n NamespaceLifecycle) Validate(ctx context.Context, a *Attributes) error {
	if !a.Kind.Namespaced || a.Operation != Create {
		return nil
	}
	ns := a.Object.GetObjectMeta().Namespace
	phase, found, err := n.Namespaces.NamespacePhase(ctx, ns)
	if err != nil {
		return status.Errorf(codes.Unavailable, "look up namespace %q: %v", ns, err)
	}
	if !found {
		return status.Errorf(codes.NotFound, "namespaces %q not found (create it first: kobectl create namespace %s)", ns, ns)
	}
	if phase == "Terminating" {
		return status.Errorf(codes.FailedPrecondition, "unable to create new content in namespace %s because it is being terminated", ns)
	}
	return nil
}

// Validation runs the kind's validation rules.
type Validation struct{}

// Name implements Validator.
func (Validation) Name() string { return "Validation" }

// Validate implements Validator.
func (Validation) Validate(_ context.Context, a *Attributes) error {
	errs := a.Kind.Validate(a.Object)
	if a.Operation == Update && a.Kind.ValidateUpdate != nil {
		errs = append(errs, a.Kind.ValidateUpdate(a.Object, a.OldObject)...)
	}
	if len(errs) == 0 {
		return nil
	}
	m := a.Object.GetObjectMeta()
	return InvalidError(fmt.Sprintf("%s %q is invalid: %v", a.Kind.Kind, m.Name, errs.ToError()), errs)
}

// causeReasons are Kubernetes' StatusCause reasons for the error types.
var causeReasons = map[validation.ErrorType]string{
	validation.Required: "FieldValueRequired", validation.Invalid: "FieldValueInvalid", validation.Duplicate: "FieldValueDuplicate",
	validation.NotSupported: "FieldValueNotSupported", validation.Forbidden: "FieldValueForbidden", validation.TooLong: "FieldValueTooLong",
}

// InvalidError is an InvalidArgument status that carries each field's
// problem as a violation, which the REST API sends as the Status's
// details.causes (reason, message, field), as Kubernetes does.
func InvalidError(msg string, errs validation.ErrorList) error {
	st := status.New(codes.InvalidArgument, msg)
	br := &errdetails.BadRequest{}
	for _, e := range errs {
		desc := strings.TrimPrefix(e.Error(), e.Field+": ")
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: e.Field, Description: desc, Reason: causeReasons[e.Type]})
	}
	if d, err := st.WithDetails(br); err == nil {
		st = d
	}
	return st.Err()
}
