// Package apierrors is the API's errors: gRPC status codes with
// Kubernetes' wording and reasons, which the REST front end turns into a
// metav1.Status with the matching HTTP code (apiserver/rest/status.go).
// It mirrors k8s.io/apimachinery/pkg/api/errors.
package apierrors

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/storage"
)

// FromStorage maps storage errors to the API's gRPC codes with Kubernetes'
// wording, naming the object.
func FromStorage(err error, k *scheme.Kind, name string) error {
	what := fmt.Sprintf("%s %q", k.QualifiedResource(), name)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return status.Errorf(codes.NotFound, "%s not found", what)
	case errors.Is(err, storage.ErrExists):
		return status.Errorf(codes.AlreadyExists, "%s already exists", what)
	case errors.Is(err, storage.ErrConflict):
		return status.Errorf(codes.Aborted, "Operation cannot be fulfilled on %s: the object has been modified; please apply your changes to the latest version and try again", what)
	case errors.Is(err, storage.ErrMoved):
		return status.Errorf(codes.Aborted, "Operation cannot be fulfilled on %s: the ResourceQuotas it is charged to kept changing; try again", what)
	case errors.Is(err, storage.ErrExpired):
		return status.Errorf(codes.OutOfRange, "%v: list again to get a current resourceVersion", err)
	case errors.Is(err, storage.ErrFuture):
		// kube-apiserver's TooLargeResourceVersion: a Timeout (504).
		return status.Errorf(codes.DeadlineExceeded, "Too large resource version: %s", strings.TrimPrefix(err.Error(), storage.ErrFuture.Error()+": "))
	case errors.Is(err, storage.ErrTooSlow):
		return status.Errorf(codes.ResourceExhausted, "%v: watch again from the last resourceVersion received", err)
	case storage.IsNoSpace(err):
		return WithReason(codes.ResourceExhausted, ReasonInternalError, "etcd database space exceeded: writes fail until objects are deleted; the API server then compacts, defragments and clears etcd's NOSPACE alarm by itself (kobune-apiserver's /readyz and the metric kobune_apiserver_storage_nospace_alarm show it)")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Errorf(codes.Unavailable, "storage: %v", err)
}

// Invalid is a 400: the request names something that cannot be.
func Invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// Kubernetes reasons that no gRPC code says by itself travel as an
// ErrorInfo detail (domain k8s.io), which the REST API turns into the
// Status reason and HTTP code (apiserver/rest/status.go).
const (
	ReasonDomain     = "k8s.io"
	ReasonBadRequest = "BadRequest"
	// ReasonRequestEntityTooLarge: a body or object over the size limit
	// (413; a client does not retry it).
	ReasonRequestEntityTooLarge = "RequestEntityTooLarge"
	// ReasonInternalError: the server cannot do it now and a retry at
	// once would not help (500, no Retry-After): a full etcd.
	ReasonInternalError = "InternalError"
	// ReasonUnsupportedMediaType: 415, a body or patch type the resource
	// does not take (a strategic merge patch of a custom resource).
	ReasonUnsupportedMediaType = "UnsupportedMediaType"
)

// WithReason is an error with a Kubernetes reason beside its code.
func WithReason(code codes.Code, reason, format string, args ...any) error {
	st := status.Newf(code, format, args...)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ReasonDomain}); err == nil {
		st = d
	}
	return st.Err()
}

// WithCause is an error whose Status lists a cause of type causeType (a
// metav1.StatusCause without a field: an eviction's "DisruptionBudget"),
// carried as a BadRequest field violation, which the REST API turns into
// the Status's details.causes as it does validation errors' fields.
func WithCause(code codes.Code, causeType, causeMessage, format string, args ...any) error {
	st := status.Newf(code, format, args...)
	if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Reason: causeType, Description: causeMessage}}}); err == nil {
		st = d
	}
	return st.Err()
}

// ContinueKey is the ErrorInfo metadata key of ExpiredContinue's token.
const ContinueKey = "continue"

// ExpiredContinue is the 410 of a list whose continue token's revision was
// compacted away, carrying the token that goes on inconsistently (the
// REST API sends it as the Status's metadata.continue).
func ExpiredContinue(msg, token string) error {
	st := status.New(codes.OutOfRange, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: "Expired", Domain: ReasonDomain, Metadata: map[string]string{ContinueKey: token}}); err == nil {
		st = d
	}
	return st.Err()
}
