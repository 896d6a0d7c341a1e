package review

import "github.com/apikit-dev/apikit/meta"

// GroupName is the API group of the reviews.
const GroupName = "authorization.k8s.io"

// Version is the served version.
const Version = "v1"

// APIVersion is GroupName/Version.
const APIVersion = GroupName + "/" + Version

// ResourceAttributes describe a request on a resource.
type ResourceAttributes struct {
	Namespace   string `json:"namespace,omitempty" protobuf:"1"`
	Verb        string `json:"verb,omitempty" protobuf:"2"`
	Group       string `json:"group,omitempty" protobuf:"3"`
	Version     string `json:"version,omitempty" protobuf:"4"`
	Resource    string `json:"resource,omitempty" protobuf:"5"`
	Subresource string `json:"subresource,omitempty" protobuf:"6"`
	Name        string `json:"name,omitempty" protobuf:"7"`
}

// NonResourceAttributes describe a request on a non-resource path.
type NonResourceAttributes struct {
	Path string `json:"path,omitempty" protobuf:"1"`
	Verb string `json:"verb,omitempty" protobuf:"2"`
}

// ExtraValue is one extra attribute of a user.
type ExtraValue []string

// SubjectAccessReviewSpec is a request and the user making it. Exactly one
// of ResourceAttributes and NonResourceAttributes is set.
type SubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty" protobuf:"1"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty" protobuf:"2"`
	User                  string                 `json:"user,omitempty" protobuf:"3"`
	Groups                []string               `json:"groups,omitempty" protobuf:"4"`
	Extra                 map[string]ExtraValue  `json:"extra,omitempty" protobuf:"5"`
	UID                   string                 `json:"uid,omitempty" protobuf:"6"`
}

// SubjectAccessReviewStatus is the answer.
type SubjectAccessReviewStatus struct {
	// Allowed is true when the request is allowed.
	Allowed bool `json:"allowed"`
	// Denied is true when an authorizer denied it outright; both false
	// means no authorizer had an opinion.
	Denied          bool   `json:"denied,omitempty"`
	Reason          string `json:"reason,omitempty"`
	EvaluationError string `json:"evaluationError,omitempty"`
}

// SubjectAccessReview asks whether a user may do something.
type SubjectAccessReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            SubjectAccessReviewSpec   `json:"spec" protobuf:"2"`
	Status          SubjectAccessReviewStatus `json:"status,omitempty"`
}

// LocalSubjectAccessReview is a SubjectAccessReview within one namespace,
// which a namespace admin may be allowed to post.
type LocalSubjectAccessReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            SubjectAccessReviewSpec   `json:"spec" protobuf:"2"`
	Status          SubjectAccessReviewStatus `json:"status,omitempty"`
}

// SelfSubjectAccessReviewSpec is a request the caller would make.
type SelfSubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty" protobuf:"1"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty" protobuf:"2"`
}

// SelfSubjectAccessReview asks whether the caller may do something:
// `kubectl auth can-i`.
type SelfSubjectAccessReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            SelfSubjectAccessReviewSpec `json:"spec" protobuf:"2"`
	Status          SubjectAccessReviewStatus   `json:"status,omitempty"`
}

// SelfSubjectRulesReviewSpec names the namespace to list rules in.
type SelfSubjectRulesReviewSpec struct {
	Namespace string `json:"namespace,omitempty" protobuf:"1"`
}

// ResourceRule is what the caller may do on resources.
type ResourceRule struct {
	Verbs         []string `json:"verbs"`
	APIGroups     []string `json:"apiGroups,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// NonResourceRule is what the caller may do on non-resource paths.
type NonResourceRule struct {
	Verbs           []string `json:"verbs"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// SubjectRulesReviewStatus lists the rules. Incomplete is true when an
// authorizer cannot list its rules (a webhook): the list may then be short
// of what the caller may really do.
type SubjectRulesReviewStatus struct {
	ResourceRules    []ResourceRule    `json:"resourceRules"`
	NonResourceRules []NonResourceRule `json:"nonResourceRules"`
	Incomplete       bool              `json:"incomplete"`
	EvaluationError  string            `json:"evaluationError,omitempty"`
}

// SelfSubjectRulesReview lists what the caller may do in a namespace:
// `kubectl auth can-i --list`.
type SelfSubjectRulesReview struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	Spec            SelfSubjectRulesReviewSpec `json:"spec" protobuf:"2"`
	Status          SubjectRulesReviewStatus   `json:"status,omitempty"`
}
