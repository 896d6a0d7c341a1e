// Package leases serves coordination.k8s.io/v1 leases
// (/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases), which
// client-go's leader election and controller-runtime managers hold.
package leases

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// GroupName is the API group of leases.
const GroupName = "coordination.k8s.io"

// Lease is coordination.k8s.io/v1 Lease.
type Lease struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`

	Spec LeaseSpec `json:"spec,omitempty" protobuf:"2"`
}

// SwaggerDoc describes Lease in OpenAPI, in kube-apiserver's words.
func (Lease) SwaggerDoc() map[string]string {
	return map[string]string{
		"":         "Lease defines a lease concept.",
		"metadata": "metadata is the standard object metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
		"spec":     "spec contains the specification of the Lease. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
	}
}

// ListSwaggerDoc describes LeaseList in OpenAPI, in kube-apiserver's words.
func (Lease) ListSwaggerDoc() map[string]string {
	return map[string]string{
		"":         "LeaseList is a list of Lease objects.",
		"items":    "items is a list of schema objects.",
		"metadata": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
	}
}

// LeaseSpec is who holds the lease and until when.
type LeaseSpec struct {
	HolderIdentity       *string         `json:"holderIdentity,omitempty" protobuf:"1"`
	LeaseDurationSeconds *int32          `json:"leaseDurationSeconds,omitempty" protobuf:"2"`
	AcquireTime          *meta.MicroTime `json:"acquireTime,omitempty" protobuf:"3"`
	RenewTime            *meta.MicroTime `json:"renewTime,omitempty" protobuf:"4"`
	LeaseTransitions     *int32          `json:"leaseTransitions,omitempty" protobuf:"5"`
	Strategy             *string         `json:"strategy,omitempty" protobuf:"6"`
	PreferredHolder      *string         `json:"preferredHolder,omitempty" protobuf:"7"`
}

// SwaggerDoc describes LeaseSpec in OpenAPI, in kube-apiserver's words.
func (LeaseSpec) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                     "LeaseSpec is a specification of a Lease.",
		"acquireTime":          "acquireTime is a time when the current lease was acquired.",
		"holderIdentity":       "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
		"leaseDurationSeconds": "leaseDurationSeconds is a duration that candidates for a lease need to wait to force acquire it. This is measured against the time of last observed renewTime.",
		"leaseTransitions":     "leaseTransitions is the number of transitions of a lease between holders.",
		"preferredHolder":      "preferredHolder signals to a lease holder that the lease has a more optimal holder and should be given up. This field can only be set if Strategy is also set.",
		"renewTime":            "renewTime is a time when the current holder of a lease has last updated the lease.",
		"strategy":             "strategy indicates the strategy for picking the leader for coordinated leader election. If the field is not specified, there is no active coordination for this lease. (Alpha) Using this field requires the CoordinatedLeaderElection feature gate to be enabled.",
	}
}

// New returns the leases store on the storage f gives it.
func New(f storage.Factory) (*registry.Store[*Lease], error) {
	resource := meta.GroupResource{Group: GroupName, Resource: "leases"}
	st, err := f.For(resource)
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	return registry.NewStore(registry.Options[*Lease]{
		Resource: resource,
		Kind:     "Lease",
		// kube-apiserver's strategy validates the metadata first.
		MetadataErrorsFirst: true,
		NoGeneration:        true,
		DeleteStatus:        true,
		NamespaceScoped:     true,
		StorageVersion:      "v1",
		// As kube-apiserver: a PUT may create a lease, and must name the
		// resourceVersion it updates.
		AllowCreateOnUpdate: true,
		Strategy:            strategy{},
		Storage:             st,
		Columns: []registry.Column[*Lease]{
			{Name: "Holder", Type: "string", Description: "holderIdentity contains the identity of the holder of a current lease.", Value: func(l *Lease) any {
				if l.Spec.HolderIdentity == nil {
					return ""
				}
				return *l.Spec.HolderIdentity
			}},
		},
	})
}

type strategy struct {
	registry.DefaultStrategy[*Lease]
}

func (strategy) Validate(_ context.Context, l *Lease) meta.FieldErrors { return Validate(l) }

func (strategy) ValidateUpdate(_ context.Context, l, _ *Lease) meta.FieldErrors { return Validate(l) }

// Validate checks a Lease's spec as kube-apiserver does.
func Validate(l *Lease) meta.FieldErrors {
	var errs meta.FieldErrors
	p := meta.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, meta.Invalid(p.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if n := l.Spec.LeaseTransitions; n != nil && *n < 0 {
		errs = append(errs, meta.Invalid(p.Child("leaseTransitions"), *n, "must be greater than or equal to 0"))
	}
	if l.Spec.PreferredHolder != nil && *l.Spec.PreferredHolder != "" && (l.Spec.Strategy == nil || *l.Spec.Strategy == "") {
		errs = append(errs, meta.Forbidden(p.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}
