package meta

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// StatusReason is the machine-readable reason of a failed request.
type StatusReason string

// The reasons Kubernetes clients branch on. Values match k8s.io/apimachinery.
const (
	StatusReasonUnknown               StatusReason = ""
	StatusReasonUnauthorized          StatusReason = "Unauthorized"
	StatusReasonForbidden             StatusReason = "Forbidden"
	StatusReasonNotFound              StatusReason = "NotFound"
	StatusReasonAlreadyExists         StatusReason = "AlreadyExists"
	StatusReasonConflict              StatusReason = "Conflict"
	StatusReasonGone                  StatusReason = "Gone"
	StatusReasonInvalid               StatusReason = "Invalid"
	StatusReasonServerTimeout         StatusReason = "ServerTimeout"
	StatusReasonTimeout               StatusReason = "Timeout"
	StatusReasonTooManyRequests       StatusReason = "TooManyRequests"
	StatusReasonBadRequest            StatusReason = "BadRequest"
	StatusReasonMethodNotAllowed      StatusReason = "MethodNotAllowed"
	StatusReasonNotAcceptable         StatusReason = "NotAcceptable"
	StatusReasonRequestEntityTooLarge StatusReason = "RequestEntityTooLarge"
	StatusReasonUnsupportedMediaType  StatusReason = "UnsupportedMediaType"
	StatusReasonInternalError         StatusReason = "InternalError"
	StatusReasonExpired               StatusReason = "Expired"
	StatusReasonServiceUnavailable    StatusReason = "ServiceUnavailable"
)

// Status values of the Status.Status field.
const (
	StatusSuccess = "Success"
	StatusFailure = "Failure"
)

// Status is the body of every error response, and of a few successful ones
// (a DELETE that completed, for instance).
type Status struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata"`
	Status   string         `json:"status,omitempty"`
	Message  string         `json:"message,omitempty"`
	Reason   StatusReason   `json:"reason,omitempty"`
	Details  *StatusDetails `json:"details,omitempty"`
	Code     int32          `json:"code,omitempty"`
}

// StatusDetails names the object a Status is about, and the field causes.
type StatusDetails struct {
	Name              string        `json:"name,omitempty"`
	Group             string        `json:"group,omitempty"`
	Kind              string        `json:"kind,omitempty"`
	UID               string        `json:"uid,omitempty"`
	Causes            []StatusCause `json:"causes,omitempty"`
	RetryAfterSeconds int32         `json:"retryAfterSeconds,omitempty"`
}

// StatusCause is one reason (often one field) behind a failure.
type StatusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}

// StatusError is an error that carries the Status to answer with. Handlers
// return it; the server writes ErrStatus with ErrStatus.Code as HTTP status.
type StatusError struct {
	ErrStatus Status
}

// Error returns the Status message.
func (e *StatusError) Error() string { return e.ErrStatus.Message }

// Status returns the Status to write.
func (e *StatusError) Status() Status { return e.ErrStatus }

func newStatusError(code int32, reason StatusReason, message string, details *StatusDetails) *StatusError {
	return &StatusError{Status{
		TypeMeta: TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   StatusFailure,
		Code:     code,
		Reason:   reason,
		Message:  message,
		Details:  details,
	}}
}

// NewNotFound reports that the named object does not exist.
func NewNotFound(gr GroupResource, name string) *StatusError {
	return newStatusError(http.StatusNotFound, StatusReasonNotFound,
		fmt.Sprintf("%s %q not found", gr.String(), name),
		&StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: name})
}

// NewNotFoundPath reports that no handler serves the request path.
func NewNotFoundPath() *StatusError {
	return newStatusError(http.StatusNotFound, StatusReasonNotFound,
		"the server could not find the requested resource", &StatusDetails{})
}

// NewAlreadyExists reports a create of a name that is taken.
func NewAlreadyExists(gr GroupResource, name string) *StatusError {
	return newStatusError(http.StatusConflict, StatusReasonAlreadyExists,
		fmt.Sprintf("%s %q already exists", gr.String(), name),
		&StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: name})
}

// NewConflict reports a write that lost a race or failed a precondition.
func NewConflict(gr GroupResource, name string, err error) *StatusError {
	return newStatusError(http.StatusConflict, StatusReasonConflict,
		fmt.Sprintf("Operation cannot be fulfilled on %s %q: %v", gr.String(), name, err),
		&StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: name})
}

// NewInvalid reports field validation errors (422), one cause per field error.
func NewInvalid(gk GroupKind, name string, errs FieldErrors) *StatusError {
	causes := make([]StatusCause, 0, len(errs))
	for _, e := range errs {
		causes = append(causes, StatusCause{Type: string(e.Type), Message: e.ErrorBody(), Field: e.Field})
	}
	msg := fmt.Sprintf("%s %q is invalid", gk.String(), name)
	if len(errs) > 0 {
		msg += ": " + errs.Error()
	}
	return newStatusError(http.StatusUnprocessableEntity, StatusReasonInvalid, msg,
		&StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name, Causes: causes})
}

// NewBadRequest reports a malformed request (400).
func NewBadRequest(message string) *StatusError {
	return newStatusError(http.StatusBadRequest, StatusReasonBadRequest, message, nil)
}

// NewUnauthorized reports a request without valid credentials (401). An
// empty message becomes "not authorized", as in Kubernetes; kube-apiserver's
// authentication filter itself answers NewUnauthorized("Unauthorized").
func NewUnauthorized(message string) *StatusError {
	if message == "" {
		message = "not authorized"
	}
	return newStatusError(http.StatusUnauthorized, StatusReasonUnauthorized, message, nil)
}

// NewForbidden reports a request the caller may not make (403).
func NewForbidden(gr GroupResource, name string, err error) *StatusError {
	var msg string
	switch {
	case gr.Resource == "" && gr.Group == "":
		msg = fmt.Sprintf("forbidden: %v", err)
	case name == "":
		msg = fmt.Sprintf("%s is forbidden: %v", gr.String(), err)
	default:
		msg = fmt.Sprintf("%s %q is forbidden: %v", gr.String(), name, err)
	}
	return newStatusError(http.StatusForbidden, StatusReasonForbidden, msg,
		&StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: name})
}

// NewMethodNotSupported reports a verb the resource does not serve (405).
func NewMethodNotSupported(gr GroupResource, action string) *StatusError {
	return newStatusError(http.StatusMethodNotAllowed, StatusReasonMethodNotAllowed,
		fmt.Sprintf("%s is not supported on resources of kind %q", action, gr.String()),
		&StatusDetails{Group: gr.Group, Kind: gr.Resource})
}

// NewGone reports a resource version that is no longer available (410).
func NewGone(message string) *StatusError {
	return newStatusError(http.StatusGone, StatusReasonGone, message, nil)
}

// NewResourceExpired reports a resource version or continue token older than
// the compacted history (410, reason Expired), as watches and lists do.
func NewResourceExpired(message string) *StatusError {
	return newStatusError(http.StatusGone, StatusReasonExpired, message, nil)
}

// NewRequestEntityTooLarge reports a body over the size limit (413).
func NewRequestEntityTooLarge(message string) *StatusError {
	return newStatusError(http.StatusRequestEntityTooLarge, StatusReasonRequestEntityTooLarge,
		"Request entity too large: "+message, nil)
}

// NewUnsupportedMediaType reports a body in a format the server does not read
// (415). Like Kubernetes, the body names the accepted types but not
// contentType, and has no details; contentType is there for the caller's
// own logging and a future cause.
func NewUnsupportedMediaType(contentType string, accepted []string) *StatusError {
	return newStatusError(http.StatusUnsupportedMediaType, StatusReasonUnsupportedMediaType,
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", strings.Join(accepted, ", ")),
		nil)
}

// NewNotAcceptable reports an Accept header the server cannot satisfy (406).
func NewNotAcceptable(accepted []string) *StatusError {
	return newStatusError(http.StatusNotAcceptable, StatusReasonNotAcceptable,
		fmt.Sprintf("only the following media types are accepted: %s", strings.Join(accepted, ", ")), nil)
}

// NewTooManyRequests reports overload (429); clients retry after retryAfterSeconds.
func NewTooManyRequests(message string, retryAfterSeconds int) *StatusError {
	return newStatusError(http.StatusTooManyRequests, StatusReasonTooManyRequests, message,
		&StatusDetails{RetryAfterSeconds: int32(retryAfterSeconds)})
}

// NewServiceUnavailable reports that the server or a backend cannot serve now (503).
func NewServiceUnavailable(message string) *StatusError {
	return newStatusError(http.StatusServiceUnavailable, StatusReasonServiceUnavailable, message, nil)
}

// NewTimeout reports that the server gave up waiting on something (504).
func NewTimeout(message string, retryAfterSeconds int) *StatusError {
	return newStatusError(http.StatusGatewayTimeout, StatusReasonTimeout, "Timeout: "+message,
		&StatusDetails{RetryAfterSeconds: int32(retryAfterSeconds)})
}

// NewServerTimeout reports a request that could not finish in time (500, ServerTimeout).
func NewServerTimeout(gr GroupResource, operation string, retryAfterSeconds int) *StatusError {
	return newStatusError(http.StatusInternalServerError, StatusReasonServerTimeout,
		fmt.Sprintf("The %s operation against %s could not be completed at this time, please try again.", operation, gr.String()),
		// Kubernetes puts the operation in details.name.
		&StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: operation, RetryAfterSeconds: int32(retryAfterSeconds)})
}

// NewInternalError reports a server-side failure (500).
func NewInternalError(err error) *StatusError {
	return newStatusError(http.StatusInternalServerError, StatusReasonInternalError,
		fmt.Sprintf("Internal error occurred: %v", err),
		&StatusDetails{Causes: []StatusCause{{Message: err.Error()}}})
}

// StatusOf returns the Status for err: its own for a StatusError (found
// through wrapping), an internal error otherwise.
func StatusOf(err error) Status {
	var se *StatusError
	if errors.As(err, &se) {
		return se.ErrStatus
	}
	return NewInternalError(err).ErrStatus
}

// ReasonForError returns the StatusReason of err, or StatusReasonUnknown.
func ReasonForError(err error) StatusReason {
	var se *StatusError
	if errors.As(err, &se) {
		return se.ErrStatus.Reason
	}
	return StatusReasonUnknown
}

// IsNotFound reports whether err is a NotFound StatusError.
func IsNotFound(err error) bool { return ReasonForError(err) == StatusReasonNotFound }

// IsAlreadyExists reports whether err is an AlreadyExists StatusError.
func IsAlreadyExists(err error) bool { return ReasonForError(err) == StatusReasonAlreadyExists }

// IsConflict reports whether err is a Conflict StatusError.
func IsConflict(err error) bool { return ReasonForError(err) == StatusReasonConflict }

// IsInvalid reports whether err is an Invalid StatusError.
func IsInvalid(err error) bool { return ReasonForError(err) == StatusReasonInvalid }

// IsForbidden reports whether err is a Forbidden StatusError.
func IsForbidden(err error) bool { return ReasonForError(err) == StatusReasonForbidden }

// IsBadRequest reports whether err is a BadRequest StatusError.
func IsBadRequest(err error) bool { return ReasonForError(err) == StatusReasonBadRequest }

// IsResourceExpired reports whether err is an Expired or Gone StatusError.
func IsResourceExpired(err error) bool {
	r := ReasonForError(err)
	return r == StatusReasonExpired || r == StatusReasonGone
}
