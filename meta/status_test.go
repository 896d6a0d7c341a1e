package meta

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

var flunders = GroupResource{Group: "wardle.example.com", Resource: "flunders"}

func TestStatusConstructors(t *testing.T) {
	flunderKind := GroupKind{Group: "wardle.example.com", Kind: "Flunder"}
	denied := errors.New(`User "bob" cannot get resource "flunders" in API group "wardle.example.com" in the namespace "default"`)
	modified := errors.New("the object has been modified; please apply your changes to the latest version and try again")
	tests := []struct {
		name        string
		err         *StatusError
		wantCode    int32
		wantReason  StatusReason
		wantMessage string
		wantDetails *StatusDetails
	}{
		{"not found", NewNotFound(flunders, "x"), http.StatusNotFound, StatusReasonNotFound,
			`flunders.wardle.example.com "x" not found`, &StatusDetails{Name: "x", Group: "wardle.example.com", Kind: "flunders"}},
		{"not found in the core group", NewNotFound(GroupResource{Resource: "pods"}, "p"), http.StatusNotFound, StatusReasonNotFound,
			`pods "p" not found`, &StatusDetails{Name: "p", Kind: "pods"}},
		{"not found path", NewNotFoundPath(), http.StatusNotFound, StatusReasonNotFound,
			"the server could not find the requested resource", &StatusDetails{}},
		{"already exists", NewAlreadyExists(flunders, "x"), http.StatusConflict, StatusReasonAlreadyExists,
			`flunders.wardle.example.com "x" already exists`, &StatusDetails{Name: "x", Group: "wardle.example.com", Kind: "flunders"}},
		{"conflict", NewConflict(flunders, "x", modified), http.StatusConflict, StatusReasonConflict,
			`Operation cannot be fulfilled on flunders.wardle.example.com "x": the object has been modified; please apply your changes to the latest version and try again`,
			&StatusDetails{Name: "x", Group: "wardle.example.com", Kind: "flunders"}},
		{"invalid without errors", NewInvalid(flunderKind, "x", nil), http.StatusUnprocessableEntity, StatusReasonInvalid,
			`Flunder.wardle.example.com "x" is invalid`, &StatusDetails{Name: "x", Group: "wardle.example.com", Kind: "Flunder", Causes: []StatusCause{}}},
		{"invalid", NewInvalid(flunderKind, "x", FieldErrors{
			Required(NewPath("spec", "reference"), ""),
			Invalid(NewPath("spec", "replicas"), 5, "must be less than 3"),
		}), http.StatusUnprocessableEntity, StatusReasonInvalid,
			`Flunder.wardle.example.com "x" is invalid: [spec.reference: Required value, spec.replicas: Invalid value: 5: must be less than 3]`,
			&StatusDetails{Name: "x", Group: "wardle.example.com", Kind: "Flunder", Causes: []StatusCause{
				{Type: "FieldValueRequired", Message: "Required value", Field: "spec.reference"},
				{Type: "FieldValueInvalid", Message: "Invalid value: 5: must be less than 3", Field: "spec.replicas"},
			}}},
		{"bad request", NewBadRequest("the server rejected our request for an unknown reason"), http.StatusBadRequest, StatusReasonBadRequest,
			"the server rejected our request for an unknown reason", nil},
		{"unauthorized default", NewUnauthorized(""), http.StatusUnauthorized, StatusReasonUnauthorized, "not authorized", nil},
		{"unauthorized", NewUnauthorized("Unauthorized"), http.StatusUnauthorized, StatusReasonUnauthorized, "Unauthorized", nil},
		{"forbidden", NewForbidden(flunders, "x", denied), http.StatusForbidden, StatusReasonForbidden,
			`flunders.wardle.example.com "x" is forbidden: User "bob" cannot get resource "flunders" in API group "wardle.example.com" in the namespace "default"`,
			&StatusDetails{Name: "x", Group: "wardle.example.com", Kind: "flunders"}},
		{"forbidden without name", NewForbidden(flunders, "", denied), http.StatusForbidden, StatusReasonForbidden,
			`flunders.wardle.example.com is forbidden: User "bob" cannot get resource "flunders" in API group "wardle.example.com" in the namespace "default"`,
			&StatusDetails{Group: "wardle.example.com", Kind: "flunders"}},
		{"forbidden without resource", NewForbidden(GroupResource{}, "", errors.New(`User "bob" cannot get path "/healthz"`)), http.StatusForbidden, StatusReasonForbidden,
			`forbidden: User "bob" cannot get path "/healthz"`, &StatusDetails{}},
		{"method not supported", NewMethodNotSupported(flunders, "create"), http.StatusMethodNotAllowed, StatusReasonMethodNotAllowed,
			`create is not supported on resources of kind "flunders.wardle.example.com"`, &StatusDetails{Group: "wardle.example.com", Kind: "flunders"}},
		{"gone", NewGone("too old resource version: 5 (10)"), http.StatusGone, StatusReasonGone, "too old resource version: 5 (10)", nil},
		{"expired", NewResourceExpired("too old resource version: 5 (10)"), http.StatusGone, StatusReasonExpired, "too old resource version: 5 (10)", nil},
		{"request entity too large", NewRequestEntityTooLarge("limit is 3145728"), http.StatusRequestEntityTooLarge, StatusReasonRequestEntityTooLarge,
			"Request entity too large: limit is 3145728", nil},
		{"unsupported media type", NewUnsupportedMediaType("text/plain", []string{"application/json", "application/yaml"}),
			http.StatusUnsupportedMediaType, StatusReasonUnsupportedMediaType,
			"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml", nil},
		{"not acceptable", NewNotAcceptable([]string{"application/json", "application/yaml"}), http.StatusNotAcceptable, StatusReasonNotAcceptable,
			"only the following media types are accepted: application/json, application/yaml", nil},
		{"too many requests", NewTooManyRequests("the server has received too many requests and has asked us to try again later", 1),
			http.StatusTooManyRequests, StatusReasonTooManyRequests,
			"the server has received too many requests and has asked us to try again later", &StatusDetails{RetryAfterSeconds: 1}},
		{"service unavailable", NewServiceUnavailable("etcd is down"), http.StatusServiceUnavailable, StatusReasonServiceUnavailable, "etcd is down", nil},
		{"timeout", NewTimeout("request did not complete within requested timeout - context deadline exceeded", 0),
			http.StatusGatewayTimeout, StatusReasonTimeout,
			"Timeout: request did not complete within requested timeout - context deadline exceeded", &StatusDetails{}},
		{"server timeout", NewServerTimeout(flunders, "create", 2), http.StatusInternalServerError, StatusReasonServerTimeout,
			"The create operation against flunders.wardle.example.com could not be completed at this time, please try again.",
			&StatusDetails{Name: "create", Group: "wardle.example.com", Kind: "flunders", RetryAfterSeconds: 2}},
		{"internal error", NewInternalError(errors.New("boom")), http.StatusInternalServerError, StatusReasonInternalError,
			"Internal error occurred: boom", &StatusDetails{Causes: []StatusCause{{Message: "boom"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.err.Status()
			if s.Code != tt.wantCode || s.Reason != tt.wantReason || s.Status != StatusFailure {
				t.Errorf("code, reason, status = %d, %q, %q; want %d, %q, Failure", s.Code, s.Reason, s.Status, tt.wantCode, tt.wantReason)
			}
			if s.Message != tt.wantMessage || tt.err.Error() != tt.wantMessage {
				t.Errorf("message\n got: %s\nwant: %s", s.Message, tt.wantMessage)
			}
			if !reflect.DeepEqual(s.Details, tt.wantDetails) {
				t.Errorf("details = %#v, want %#v", s.Details, tt.wantDetails)
			}
			if s.Kind != "Status" || s.APIVersion != "v1" {
				t.Errorf("TypeMeta = %+v, want Status v1", s.TypeMeta)
			}
		})
	}
}

func TestStatusJSON(t *testing.T) {
	tests := []struct {
		name string
		s    Status
		want string
	}{
		{"not found", NewNotFound(flunders, "x").ErrStatus,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"flunders.wardle.example.com \"x\" not found","reason":"NotFound","details":{"name":"x","group":"wardle.example.com","kind":"flunders"},"code":404}`},
		{"no route", NewNotFoundPath().ErrStatus,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`},
		{"invalid", NewInvalid(GroupKind{Group: "wardle.example.com", Kind: "Flunder"}, "x", FieldErrors{Invalid(NewPath("spec", "x"), "y", "detail")}).ErrStatus,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Flunder.wardle.example.com \"x\" is invalid: spec.x: Invalid value: \"y\": detail","reason":"Invalid",` +
				`"details":{"name":"x","group":"wardle.example.com","kind":"Flunder","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"y\": detail","field":"spec.x"}]},"code":422}`},
		{"too many requests", NewTooManyRequests("slow down", 3).ErrStatus,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"slow down","reason":"TooManyRequests","details":{"retryAfterSeconds":3},"code":429}`},
		{"internal error", NewInternalError(errors.New("a <b> & c")).ErrStatus,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: a \u003cb\u003e \u0026 c","reason":"InternalError","details":{"causes":[{"message":"a \u003cb\u003e \u0026 c"}]},"code":500}`},
		{"successful delete", Status{TypeMeta: TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: StatusSuccess,
			Details: &StatusDetails{Name: "x", Group: "wardle.example.com", Kind: "flunders", UID: "0e9d"}},
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"x","group":"wardle.example.com","kind":"flunders","uid":"0e9d"}}`},
		{"empty", Status{}, `{"metadata":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkJSON(t, tt.s, tt.want) })
	}
}

func TestStatusHelpers(t *testing.T) {
	notFound := fmt.Errorf("get: %w", NewNotFound(flunders, "x"))
	tests := []struct {
		name  string
		is    func(error) bool
		err   error
		want  bool
		cause StatusReason
	}{
		{"wrapped not found", IsNotFound, notFound, true, StatusReasonNotFound},
		{"already exists", IsAlreadyExists, NewAlreadyExists(flunders, "x"), true, StatusReasonAlreadyExists},
		{"conflict", IsConflict, NewConflict(flunders, "x", errors.New("e")), true, StatusReasonConflict},
		{"already exists is not a conflict", IsConflict, NewAlreadyExists(flunders, "x"), false, StatusReasonAlreadyExists},
		{"invalid", IsInvalid, NewInvalid(GroupKind{}, "x", nil), true, StatusReasonInvalid},
		{"forbidden", IsForbidden, NewForbidden(flunders, "x", errors.New("e")), true, StatusReasonForbidden},
		{"bad request", IsBadRequest, NewBadRequest("e"), true, StatusReasonBadRequest},
		{"expired", IsResourceExpired, NewResourceExpired("e"), true, StatusReasonExpired},
		{"gone counts as expired", IsResourceExpired, NewGone("e"), true, StatusReasonGone},
		{"plain error", IsNotFound, errors.New("x"), false, StatusReasonUnknown},
		{"nil", IsNotFound, nil, false, StatusReasonUnknown},
	}
	for _, tt := range tests {
		if got := tt.is(tt.err); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
		if got := ReasonForError(tt.err); got != tt.cause {
			t.Errorf("%s: ReasonForError = %q, want %q", tt.name, got, tt.cause)
		}
	}
	if s := StatusOf(notFound); s.Code != http.StatusNotFound || s.Message != `flunders.wardle.example.com "x" not found` {
		t.Errorf("StatusOf(wrapped) = %+v", s)
	}
	if s := StatusOf(errors.New("disk full")); s.Code != http.StatusInternalServerError || s.Message != "Internal error occurred: disk full" {
		t.Errorf("StatusOf(plain) = %+v", s)
	}
}
