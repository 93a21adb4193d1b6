package apiserver

import (
	"encoding/json"
	"errors"
	"net/http"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors on the REST API are metav1.Status objects, with the HTTP code and
// the reason Kubernetes gives for the same failure (kubectl prints
// "Error from server (NotFound): pods "x" not found" from them, and
// client-go's errors.IsNotFound and friends read the reason).

// restStatus is metav1.Status.
type restStatus struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   struct{}       `json:"metadata"`
	Status     string         `json:"status"`
	Message    string         `json:"message,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Details    *statusDetails `json:"details,omitempty"`
	Code       int            `json:"code"`
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
var reasonCodes = map[string]int{reasonBadRequest: http.StatusBadRequest}

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
			if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == reasonDomain {
				if c, ok := reasonCodes[info.Reason]; ok {
					st.Code, st.Reason = c, info.Reason
				}
			}
		}
	}
	if t != nil && t.resource != "" {
		if st.Details == nil {
			st.Details = &statusDetails{}
		}
		st.Details.Name, st.Details.Group, st.Details.Kind = t.name, t.group, t.resource
	}
	if st.Code == http.StatusTooManyRequests {
		if st.Details == nil {
			st.Details = &statusDetails{}
		}
		st.Details.RetryAfterSeconds = 1
	}
	return st
}

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
