package webhook

import (
	"encoding/json"

	"github.com/apikit-dev/apikit/meta"
)

// ReviewGroupVersion is the apiVersion of the AdmissionReviews sent and
// expected back.
const ReviewGroupVersion = "admission.k8s.io/v1"

// AdmissionReview is admission.k8s.io/v1's AdmissionReview, as sent to a
// webhook (Request) and answered (Response).
type AdmissionReview struct {
	meta.TypeMeta `json:",inline"`
	Request       *AdmissionRequest  `json:"request,omitempty"`
	Response      *AdmissionResponse `json:"response,omitempty"`
}

// AdmissionRequest describes the write a webhook is asked about.
type AdmissionRequest struct {
	UID                string                `json:"uid"`
	Kind               GroupVersionKind      `json:"kind"`
	Resource           GroupVersionResource  `json:"resource"`
	SubResource        string                `json:"subResource,omitempty"`
	RequestKind        *GroupVersionKind     `json:"requestKind,omitempty"`
	RequestResource    *GroupVersionResource `json:"requestResource,omitempty"`
	RequestSubResource string                `json:"requestSubResource,omitempty"`
	Name               string                `json:"name,omitempty"`
	Namespace          string                `json:"namespace,omitempty"`
	Operation          string                `json:"operation"`
	UserInfo           UserInfo              `json:"userInfo"`
	Object             json.RawMessage       `json:"object,omitempty"`
	OldObject          json.RawMessage       `json:"oldObject,omitempty"`
	DryRun             *bool                 `json:"dryRun,omitempty"`
	Options            json.RawMessage       `json:"options,omitempty"`
}

// GroupVersionKind is metav1.GroupVersionKind on the wire.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// GroupVersionResource is metav1.GroupVersionResource on the wire.
type GroupVersionResource struct {
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
}

// UserInfo is authentication.k8s.io/v1's UserInfo: who is writing.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// AdmissionResponse is a webhook's answer.
type AdmissionResponse struct {
	UID     string       `json:"uid"`
	Allowed bool         `json:"allowed"`
	Result  *meta.Status `json:"status,omitempty"`
	// Patch is a JSON Patch (RFC 6902) of the object, with PatchType
	// "JSONPatch"; only mutating webhooks may send one.
	Patch            []byte            `json:"patch,omitempty"`
	PatchType        *string           `json:"patchType,omitempty"`
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	Warnings         []string          `json:"warnings,omitempty"`
}

// PatchTypeJSONPatch is the only patch type of admission.k8s.io/v1.
const PatchTypeJSONPatch = "JSONPatch"
