// Package v1beta1 holds the wardle.example.com/v1beta1 API types of the
// Kubernetes sample-apiserver; v1beta1 is the preferred and storage version
// of Flunder.
//
// The `description` tags and SwaggerDoc methods document the types in the
// server's OpenAPI, which `kubectl explain` shows.
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

	Spec   FlunderSpec   `json:"spec,omitempty" description:"Spec is the desired state of the Flunder."`
	Status FlunderStatus `json:"status,omitempty" description:"Status is the observed state of the Flunder."`
}

// SwaggerDoc describes Flunder in OpenAPI.
func (Flunder) SwaggerDoc() map[string]string {
	return map[string]string{"": "Flunder is the sample's namespaced resource: it refers to another flunder or to a fischer."}
}

// FlunderSpec is the desired state of a Flunder.
type FlunderSpec struct {
	// A name of another flunder, mutually exclusive to the FischerReference.
	FlunderReference string `json:"flunderReference,omitempty" description:"A name of another flunder, mutually exclusive to the FischerReference."`
	// A name of a fischer, mutually exclusive to the FlunderReference.
	FischerReference string `json:"fischerReference,omitempty" description:"A name of a fischer, mutually exclusive to the FlunderReference."`
	// The reference type.
	ReferenceType *ReferenceType `json:"referenceType,omitempty" description:"The reference type: Flunder when flunderReference is set, Fischer when fischerReference is. Defaulted from whichever is set." enum:"Flunder|Fischer"`
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
