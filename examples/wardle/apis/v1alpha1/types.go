// Package v1alpha1 holds the wardle.example.com/v1alpha1 API types of the
// Kubernetes sample-apiserver: Flunder (namespaced) and Fischer (cluster-scoped).
package v1alpha1

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
	// A name of another flunder or fischer, depending on the reference type.
	Reference string `json:"reference,omitempty"`
	// The reference type, defaults to "Flunder" if reference is set.
	ReferenceType *ReferenceType `json:"referenceType,omitempty"`
}

// FlunderStatus is the observed state of a Flunder.
type FlunderStatus struct{}

// Fischer is the sample's cluster-scoped resource.
type Fischer struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`

	// DisallowedFlunders holds a list of Flunder.Names that are disallowed.
	DisallowedFlunders []string `json:"disallowedFlunders,omitempty"`
}
