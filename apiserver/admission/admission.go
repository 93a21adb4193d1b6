package admission

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/certificates"
	"github.com/kobune/kobune/api/core"
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
	// Subresource is the pod subresource written (ephemeralcontainers,
	// resize), judged by the SubresourceValidators; "" otherwise.
	Subresource string
}

type dryRunKey struct{}

// WithDryRun marks ctx as a dry run's: nothing will be stored, and an
// admission webhook with side effects must not be called.
func WithDryRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, dryRunKey{}, true)
}

// IsDryRun reports whether ctx is a dry run's.
func IsDryRun(ctx context.Context) bool { return ctx.Value(dryRunKey{}) != nil }

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

// SubresourceValidator is a Validator that also judges a write of a
// subresource that changes one part of an object (a.Subresource: a pod's
// ephemeralcontainers or resize, a CertificateSigningRequest's
// approval): the object as it would be, and as it was.
type SubresourceValidator interface {
	ValidateSubresource(ctx context.Context, a *Attributes) error
}

// AdmitSubresource runs the validators that judge a write of such a
// subresource (Validation; Pod Security for ephemeral containers;
// LimitRanger and ResourceQuota for a resize), as kube-apiserver's
// admission judges the subresources — the other plugins leave them alone.
func (c *Chain) AdmitSubresource(ctx context.Context, a *Attributes) error {
	for _, v := range c.Validators {
		if ev, ok := v.(SubresourceValidator); ok {
			if err := ev.ValidateSubresource(ctx, a); err != nil {
				return err
			}
		}
	}
	return nil
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

// Step is one plugin of the chain and why it stands where it does. A
// plugin may mutate, validate or both (LimitRanger defaults requests, then
// refuses what breaks a limit); a nil Plugin is a step this server does
// not run (RBAC's escalation check without RBAC).
type Step struct {
	Plugin any
	Why    string
}

// NewChain builds the chain from its steps, in the order given:
// kube-apiserver's AllOrderedPlugins, one list. As there, every mutating
// step runs before every validating one, each in list order, so a
// validator sees the object as it will be stored.
func NewChain(steps ...Step) *Chain {
	c := &Chain{}
	for _, st := range steps {
		if st.Plugin == nil {
			continue
		}
		m, isM := st.Plugin.(Mutator)
		v, isV := st.Plugin.(Validator)
		if !isM && !isV {
			panic(fmt.Sprintf("admission step %T is neither a Mutator nor a Validator", st.Plugin))
		}
		if isM {
			c.Mutators = append(c.Mutators, m)
		}
		if isV {
			c.Validators = append(c.Validators, v)
		}
	}
	return c
}

// Names are the chain's steps as they run: the mutating ones, then the
// validating ones.
func (c *Chain) Names() (mutating, validating []string) {
	for _, m := range c.Mutators {
		mutating = append(mutating, m.Name())
	}
	for _, v := range c.Validators {
		validating = append(validating, v.Name())
	}
	return mutating, validating
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
	if a.Operation == Create && a.Kind.ValidateCreate != nil {
		errs = append(errs, a.Kind.ValidateCreate(a.Object)...)
	}
	if len(errs) == 0 {
		return nil
	}
	m := a.Object.GetObjectMeta()
	return InvalidError(fmt.Sprintf("%s %q is invalid: %v", a.Kind.Kind, m.Name, errs.ToError()), errs)
}

// ValidateStatus implements StatusValidator: a status write is checked by
// the kind's status rules (scheme.Kind.ValidateStatus), and a custom
// resource's by its whole schema and rules, status included, as
// kube-apiserver's status strategies do.
func (Validation) ValidateStatus(_ context.Context, a *Attributes) error {
	var errs validation.ErrorList
	switch {
	case a.Kind.Custom != nil:
		errs = a.Kind.Validate(a.Object)
		if a.Kind.ValidateUpdate != nil {
			errs = append(errs, a.Kind.ValidateUpdate(a.Object, a.OldObject)...)
		}
	case a.Kind.ValidateStatus != nil:
		errs = a.Kind.ValidateStatus(a.Object, a.OldObject)
	}
	if len(errs) == 0 {
		return nil
	}
	m := a.Object.GetObjectMeta()
	return InvalidError(fmt.Sprintf("%s %q is invalid: %v", a.Kind.Kind, m.Name, errs.ToError()), errs)
}

// ValidateSubresource implements SubresourceValidator: the kind's rules,
// and those of the subresource: ephemeral containers are added, never
// changed or removed; a resize changes only requests and limits of cpu
// and memory, keeping the pod's QoS class; an approval's conditions are
// well formed, never both Approved and Denied.
func (Validation) ValidateSubresource(_ context.Context, a *Attributes) error {
	errs := a.Kind.Validate(a.Object)
	switch n := a.Object.(type) {
	case *core.Pod:
		o := a.OldObject.(*core.Pod)
		switch a.Subresource {
		case "ephemeralcontainers":
			errs = append(errs, core.ValidatePodEphemeralContainersUpdate(n, o)...)
		case "resize":
			errs = append(errs, core.ValidatePodResize(n, o)...)
		}
	case *certificates.CertificateSigningRequest:
		errs = append(errs, certificates.ValidateApproval(n)...)
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
	validation.NotSupported: "FieldValueNotSupported", validation.Forbidden: "FieldValueForbidden", validation.TooLong: "FieldValueTooLong", validation.TooMany: "FieldValueTooMany",
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
