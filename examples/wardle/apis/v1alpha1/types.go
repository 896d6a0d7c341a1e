// Package v1alpha1 holds the wardle.example.com/v1alpha1 API types of the
// Kubernetes sample-apiserver: Flunder (namespaced) and Fischer (cluster-scoped).
//
// The `description` tags and SwaggerDoc methods document the types in the
// server's OpenAPI, which `kubectl explain` shows.
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

	Spec   FlunderSpec   `json:"spec,omitempty" description:"Spec is the desired state of the Flunder."`
	Status FlunderStatus `json:"status,omitempty" description:"Status is the observed state of the Flunder."`
}

// SwaggerDoc describes Flunder in OpenAPI.
func (Flunder) SwaggerDoc() map[string]string {
	return map[string]string{"": "Flunder is the sample's namespaced resource: it refers to another flunder or to a fischer."}
}

// FlunderSpec is the desired state of a Flunder.
type FlunderSpec struct {
	// A name of another flunder or fischer, depending on the reference type.
	Reference string `json:"reference,omitempty" description:"A name of another flunder or fischer, depending on the reference type."`
	// The reference type, defaults to "Flunder" if reference is set.
	ReferenceType *ReferenceType `json:"referenceType,omitempty" description:"The reference type, defaults to \"Flunder\" if reference is set." enum:"Flunder|Fischer"`
}

// SwaggerDoc describes FlunderSpec in OpenAPI.
func (FlunderSpec) SwaggerDoc() map[string]string {
	return map[string]string{"": "FlunderSpec is the desired state of a Flunder."}
}

// FlunderStatus is the observed state of a Flunder.
type FlunderStatus struct{}

// SwaggerDoc describes FlunderStatus in OpenAPI.
func (FlunderStatus) SwaggerDoc() map[string]string {
	return map[string]string{"": "FlunderStatus is the observed state of a Flunder."}
}

// Fischer is the sample's cluster-scoped resource.
type Fischer struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`

	// DisallowedFlunders holds a list of Flunder.Names that are disallowed.
	DisallowedFlunders []string `json:"disallowedFlunders,omitempty" description:"DisallowedFlunders holds a list of Flunder.Names that are disallowed."`
}

// SwaggerDoc describes Fischer in OpenAPI.
func (Fischer) SwaggerDoc() map[string]string {
	return map[string]string{"": "Fischer is the sample's cluster-scoped resource: it names the flunders that may not be created."}
}
