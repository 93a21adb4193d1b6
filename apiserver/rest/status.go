package rest

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/apiserver/apierrors"
)

// Errors on the REST API are metav1.Status objects, with the HTTP code and
// the reason Kubernetes gives for the same failure (kubectl prints
// "Error from server (NotFound): pods "x" not found" from them, and
// client-go's errors.IsNotFound and friends read the reason).

// restStatus is metav1.Status.
type restStatus struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Continue string `json:"continue,omitempty"`
	} `json:"metadata"`
	Status  string         `json:"status"`
	Message string         `json:"message,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	Details *statusDetails `json:"details,omitempty"`
	Code    int            `json:"code"`
}

type statusDetails struct {
	Name              string        `json:"name,omitempty"`
	Group             string        `json:"group,omitempty"`
	Kind              string        `json:"kind,omitempty"`
	Causes            []statusCause `json:"causes,omitempty"`
	RetryAfterSeconds int           `json:"retryAfterSeconds,omitempty"`
}

type statusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}

// httpError is an error that only the REST API has (a body in an unknown
// format, a name that does not match the URL), with its code and reason.
type httpError struct {
	code           int
	reason, detail string
}

func (e *httpError) Error() string { return e.detail }

func statusWithCode(code int, reason, msg string) error {
	return &httpError{code: code, reason: reason, detail: msg}
}

// reasons are metav1.StatusReason for each gRPC code the API uses, with
// the HTTP code Kubernetes sends it with.
var reasons = map[codes.Code]struct {
	code   int
	reason string
}{
	codes.NotFound:           {http.StatusNotFound, "NotFound"},
	codes.AlreadyExists:      {http.StatusConflict, "AlreadyExists"},
	codes.Aborted:            {http.StatusConflict, "Conflict"},
	codes.InvalidArgument:    {http.StatusUnprocessableEntity, "Invalid"},
	codes.PermissionDenied:   {http.StatusForbidden, "Forbidden"},
	codes.Unauthenticated:    {http.StatusUnauthorized, "Unauthorized"},
	codes.FailedPrecondition: {http.StatusBadRequest, "BadRequest"},
	codes.Unavailable:        {http.StatusServiceUnavailable, "ServiceUnavailable"},
	codes.ResourceExhausted:  {http.StatusTooManyRequests, "TooManyRequests"},
	codes.DeadlineExceeded:   {http.StatusGatewayTimeout, "Timeout"},
	codes.Canceled:           {499, "Timeout"},
	codes.OutOfRange:         {http.StatusGone, "Expired"},
	codes.Unimplemented:      {http.StatusMethodNotAllowed, "MethodNotAllowed"},
}

// reasonCodes are the HTTP codes of the reasons errors carry (withReason).
var reasonCodes = map[string]int{
	apierrors.ReasonBadRequest:            http.StatusBadRequest,
	apierrors.ReasonRequestEntityTooLarge: http.StatusRequestEntityTooLarge,
	apierrors.ReasonInternalError:         http.StatusInternalServerError,
	apierrors.ReasonUnsupportedMediaType:  http.StatusUnsupportedMediaType,
}

// toStatus turns an error into the Status the REST API answers with.
func toStatus(err error, t *restTarget) restStatus {
	st := restStatus{Kind: "Status", APIVersion: "v1", Status: "Failure", Code: http.StatusInternalServerError, Reason: "InternalError"}
	var he *httpError
	if errors.As(err, &he) {
		st.Code, st.Reason, st.Message = he.code, he.reason, he.detail
	} else {
		s := status.Convert(err)
		st.Message = s.Message()
		if r, ok := reasons[s.Code()]; ok {
			st.Code, st.Reason = r.code, r.reason
		}
		for _, d := range s.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				if st.Details == nil {
					st.Details = &statusDetails{}
				}
				for _, v := range br.FieldViolations {
					st.Details.Causes = append(st.Details.Causes, statusCause{Type: v.Reason, Message: v.Description, Field: v.Field})
				}
			}
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == apierrors.ReasonDomain {
				if c, ok := reasonCodes[info.Reason]; ok {
					st.Code, st.Reason = c, info.Reason
				}
				st.Metadata.Continue = info.Metadata[apierrors.ContinueKey]
			}
		}
	}
	if t != nil && t.resource != "" {
		if st.Details == nil {
			st.Details = &statusDetails{}
		}
		st.Details.Name, st.Details.Group, st.Details.Kind = t.name, t.group, t.resource
		if st.Reason == "Invalid" {
			invalidDetails(&st, t)
		}
	}
	if st.Code == http.StatusTooManyRequests {
		if st.Details == nil {
			st.Details = &statusDetails{}
		}
		st.Details.RetryAfterSeconds = 1
	}
	return st
}

// invalidDetails makes a 422 what kube-apiserver's NewInvalid makes:
// details name the kind (Pod, not pods), the object's name and every
// field's problem as a cause, so that kubectl prints `The Pod "web" is
// invalid: spec.containers[0].image: Required value`. An error without
// field violations gets one cause read from its message (the field
// before the first ": " when there is one).
func invalidDetails(st *restStatus, t *restTarget) {
	if t.kind != nil && t.sub == "" {
		st.Details.Kind = t.kind.Kind
	}
	if t.objectName != "" && st.Details.Name == "" {
		st.Details.Name = t.objectName
	}
	if len(st.Details.Causes) > 0 {
		return
	}
	msg := st.Message
	if _, rest, ok := strings.Cut(msg, " is invalid: "); ok {
		msg = rest
	}
	cause := statusCause{Type: "FieldValueInvalid", Message: msg}
	if field, detail, ok := strings.Cut(msg, ": "); ok && fieldPath.MatchString(field) {
		cause.Field, cause.Message = field, detail
	}
	st.Details.Causes = []statusCause{cause}
}

// fieldPath is a field's path as errors write it: spec.containers[0].image.
var fieldPath = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*(\[[^\]]*\])*(\.[a-zA-Z$][a-zA-Z0-9]*(\[[^\]]*\])*)*$`)

func statusJSON(err error, t *restTarget) []byte {
	b, _ := json.Marshal(toStatus(err, t))
	return b
}

// writeError answers with err as a Status.
func writeError(w http.ResponseWriter, err error, t *restTarget) {
	st := toStatus(err, t)
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", "1")
	}
	b, _ := json.Marshal(st)
	writeJSON(w, st.Code, b)
}
