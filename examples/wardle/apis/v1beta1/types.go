// Package v1beta1 holds the wardle.example.com/v1beta1 API types of the
// Kubernetes sample-apiserver; v1beta1 is the preferred and storage version
// of Flunder.
package v1beta1

import "github.com/apikit-dev/apikit/meta"

// ReferenceType says what a Flunder refers to.
type ReferenceType string

// Reference types.
const (
	FlunderReferenceType = ReferenceType("Flunder")
	FischerReferenceType = ReferenceType("Fischer")
)

// Flunder is the sample's namespaced resource.
type Flunder struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlunderSpec   `json:"spec,omitempty"`
	Status FlunderStatus `json:"status,omitempty"`
}

// FlunderSpec is the desired state of a Flunder.
type FlunderSpec struct {
	// A name of another flunder, mutually exclusive to the FischerReference.
	FlunderReference string `json:"flunderReference,omitempty"`
	// A name of a fischer, mutually exclusive to the FlunderReference.
	FischerReference string `json:"fischerReference,omitempty"`
	// The reference type.
	ReferenceType *ReferenceType `json:"referenceType,omitempty"`
}

// FlunderStatus is the observed state of a Flunder.
type FlunderStatus struct{}
