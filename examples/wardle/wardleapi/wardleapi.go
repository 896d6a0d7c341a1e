// Package wardleapi serves the API of the Kubernetes sample-apiserver with
// apikit: group wardle.example.com, Flunder in v1beta1 (preferred, storage)
// and v1alpha1, Fischer in v1alpha1, the sample's validation rules, and its
// admission plugin that refuses Flunders whose name a Fischer disallows.
package wardleapi

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/authz/rbac"
	"github.com/apikit-dev/apikit/examples/wardle/apis/v1alpha1"
	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/server"
	"github.com/apikit-dev/apikit/storage"
)

// GroupName is the API group.
const GroupName = "wardle.example.com"

// API is the wardle API: its stores and what the server installs.
type API struct {
	Flunders *registry.Store[*v1beta1.Flunder]
	Fischers *registry.Store[*v1alpha1.Fischer]
}

// New builds the stores on the storage f gives each resource (with a watch
// cache in front when the server's options say so).
func New(f storage.Factory) (*API, error) {
	flunderResource := meta.GroupResource{Group: GroupName, Resource: "flunders"}
	fischerResource := meta.GroupResource{Group: GroupName, Resource: "fischers"}
	flunderStorage, err := f.For(flunderResource)
	if err != nil {
		return nil, fmt.Errorf("flunders: %w", err)
	}
	fischerStorage, err := f.For(fischerResource)
	if err != nil {
		return nil, fmt.Errorf("fischers: %w", err)
	}
	flunders, err := registry.NewStore(registry.Options[*v1beta1.Flunder]{
		Resource:        flunderResource,
		Kind:            "Flunder",
		NamespaceScoped: true,
		StorageVersion:  "v1beta1",
		Strategy:        flunderStrategy{},
		Storage:         flunderStorage,
		Columns: []registry.Column[*v1beta1.Flunder]{
			{Name: "Reference Type", Type: "string", Description: "The reference type.", Value: func(f *v1beta1.Flunder) any {
				if f.Spec.ReferenceType == nil {
					return "<none>"
				}
				return string(*f.Spec.ReferenceType)
			}},
			{Name: "Reference", Type: "string", Description: "The name of the referenced flunder or fischer.", Value: func(f *v1beta1.Flunder) any {
				switch {
				case f.Spec.FlunderReference != "":
					return f.Spec.FlunderReference
				case f.Spec.FischerReference != "":
					return f.Spec.FischerReference
				}
				return "<none>"
			}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("flunders: %w", err)
	}
	fischers, err := registry.NewStore(registry.Options[*v1alpha1.Fischer]{
		Resource:       fischerResource,
		Kind:           "Fischer",
		StorageVersion: "v1alpha1",
		Strategy:       registry.DefaultStrategy[*v1alpha1.Fischer]{},
		Storage:        fischerStorage,
		Columns: []registry.Column[*v1alpha1.Fischer]{
			{Name: "Disallowed", Type: "integer", Description: "How many flunder names this fischer disallows.", Value: func(f *v1alpha1.Fischer) any {
				return int64(len(f.DisallowedFlunders))
			}},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("fischers: %w", err)
	}
	return &API{Flunders: flunders, Fischers: fischers}, nil
}

// GroupInfo is the API group to install: v1beta1 (preferred, with the
// changes subresource of flunders) then v1alpha1.
func (a *API) GroupInfo() (*server.APIGroupInfo, error) {
	flundersV1alpha1, err := registry.ServeVersion(a.Flunders, "v1alpha1", registry.Conversion[*v1beta1.Flunder, *v1alpha1.Flunder]{
		ToStorage:   flunderToV1beta1,
		FromStorage: flunderToV1alpha1,
	})
	if err != nil {
		return nil, err
	}
	g := server.NewAPIGroupInfo(GroupName).
		AddVersion("v1beta1", registry.Serve(a.Flunders)).
		AddVersion("v1alpha1", flundersV1alpha1, registry.Serve(a.Fischers))
	g.Versions[0].Routes = a.flunderRoutes
	return g, nil
}

// ClusterRoles extend the default roles view and edit (and so admin, which
// aggregates edit) to the wardle API, through the aggregation labels:
// binding view to a user in a namespace lets them read its flunders and
// follow their changes.
func ClusterRoles() []rbac.ClusterRole {
	resources := []string{"flunders", "fischers"}
	return []rbac.ClusterRole{
		rbac.BootstrapClusterRole("wardle:aggregate-to-view", map[string]string{rbac.AggregateToView: "true"},
			rbac.Rule(GroupName, resources, "get", "list", "watch"),
			rbac.Rule(GroupName, []string{"flunders/changes"}, "get")),
		rbac.BootstrapClusterRole("wardle:aggregate-to-edit", map[string]string{rbac.AggregateToEdit: "true"},
			rbac.Rule(GroupName, resources, "create", "delete", "deletecollection", "patch", "update")),
	}
}

// flunderStrategy defaults and validates Flunders as the sample does.
type flunderStrategy struct {
	registry.DefaultStrategy[*v1beta1.Flunder]
}

// Default implements registry.Defaulter, as the sample's
// SetDefaults_FlunderSpec: admission sees a defaulted Flunder.
func (flunderStrategy) Default(f *v1beta1.Flunder) { defaultFlunder(f) }

func (flunderStrategy) Validate(_ context.Context, f *v1beta1.Flunder) meta.FieldErrors {
	return validateFlunderSpec(&f.Spec, meta.NewPath("spec"))
}

func (flunderStrategy) ValidateUpdate(_ context.Context, f, _ *v1beta1.Flunder) meta.FieldErrors {
	return validateFlunderSpec(&f.Spec, meta.NewPath("spec"))
}

// defaultFlunder sets the reference type from whichever reference is set.
func defaultFlunder(f *v1beta1.Flunder) {
	s := &f.Spec
	if s.ReferenceType != nil && *s.ReferenceType != "" {
		return
	}
	switch {
	case s.FlunderReference != "":
		t := v1beta1.FlunderReferenceType
		s.ReferenceType = &t
	case s.FischerReference != "":
		t := v1beta1.FischerReferenceType
		s.ReferenceType = &t
	}
}

// validateFlunderSpec applies the sample-apiserver's rules and messages.
func validateFlunderSpec(s *v1beta1.FlunderSpec, p *meta.Path) meta.FieldErrors {
	var errs meta.FieldErrors
	var rt v1beta1.ReferenceType
	if s.ReferenceType != nil {
		rt = *s.ReferenceType
	}
	switch {
	case s.FlunderReference != "" && s.FischerReference != "":
		errs = append(errs, meta.Invalid(p.Child("fischerReference"), s.FischerReference, "cannot be set with flunderReference at the same time"))
	case s.FlunderReference != "" && rt != v1beta1.FlunderReferenceType:
		errs = append(errs, meta.Invalid(p.Child("flunderReference"), s.FlunderReference, "cannot be set if referenceType is not Flunder"))
	case s.FischerReference != "" && rt != v1beta1.FischerReferenceType:
		errs = append(errs, meta.Invalid(p.Child("fischerReference"), s.FischerReference, "cannot be set if referenceType is not Fischer"))
	case s.FischerReference == "" && rt == v1beta1.FischerReferenceType:
		errs = append(errs, meta.Invalid(p.Child("fischerReference"), s.FischerReference, "cannot be empty if referenceType is Fischer"))
	case s.FlunderReference == "" && rt == v1beta1.FlunderReferenceType:
		errs = append(errs, meta.Invalid(p.Child("flunderReference"), s.FlunderReference, "cannot be empty if referenceType is Flunder"))
	}
	if rt != "" && rt != v1beta1.FischerReferenceType && rt != v1beta1.FlunderReferenceType {
		errs = append(errs, meta.Invalid(p.Child("referenceType"), string(rt), "must be Flunder or Fischer"))
	}
	return errs
}

// flunderToV1beta1 converts a v1alpha1 Flunder (defaulting its reference
// type to Flunder when a reference is set) to the storage version.
func flunderToV1beta1(in *v1alpha1.Flunder) (*v1beta1.Flunder, error) {
	out := &v1beta1.Flunder{ObjectMeta: in.ObjectMeta}
	rt := in.Spec.ReferenceType
	if (rt == nil || *rt == "") && in.Spec.Reference != "" {
		t := v1alpha1.FlunderReferenceType
		rt = &t
	}
	if rt != nil {
		t := v1beta1.ReferenceType(*rt)
		out.Spec.ReferenceType = &t
		switch *rt {
		case v1alpha1.FlunderReferenceType:
			out.Spec.FlunderReference = in.Spec.Reference
		case v1alpha1.FischerReferenceType:
			out.Spec.FischerReference = in.Spec.Reference
		}
	}
	return out, nil
}

// flunderToV1alpha1 converts a stored Flunder to v1alpha1.
func flunderToV1alpha1(in *v1beta1.Flunder) (*v1alpha1.Flunder, error) {
	out := &v1alpha1.Flunder{ObjectMeta: in.ObjectMeta}
	if rt := in.Spec.ReferenceType; rt != nil {
		t := v1alpha1.ReferenceType(*rt)
		out.Spec.ReferenceType = &t
		switch *rt {
		case v1beta1.FlunderReferenceType:
			out.Spec.Reference = in.Spec.FlunderReference
		case v1beta1.FischerReferenceType:
			out.Spec.Reference = in.Spec.FischerReference
		}
	}
	return out, nil
}

// BanFlunder is the sample's admission plugin: a Flunder may not be created
// with a name that any Fischer lists in disallowedFlunders.
func (a *API) BanFlunder() admission.Plugin {
	return &banFlunder{Handler: admission.Handler{Operations: []admission.Operation{admission.Create}}, fischers: a.Fischers}
}

type banFlunder struct {
	admission.Handler
	fischers *registry.Store[*v1alpha1.Fischer]
}

// BanFlunderPluginName is the plugin's name, sample-apiserver's, which
// --disable-admission-plugins takes.
const BanFlunderPluginName = "BanFlunder"

// Name implements admission.Named.
func (b *banFlunder) Name() string { return BanFlunderPluginName }

// Validate implements admission.Validator.
func (b *banFlunder) Validate(ctx context.Context, attrs *admission.Attributes) error {
	if attrs.Resource.Group != GroupName || attrs.Resource.Resource != "flunders" || attrs.Subresource != "" {
		return nil
	}
	list, err := b.fischers.List(ctx, "", meta.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("listing fischers: %w", err)
	}
	for _, e := range list.Items {
		for _, name := range e.Object.DisallowedFlunders {
			if name == attrs.Name {
				return meta.NewForbidden(attrs.Resource.GroupResource(), attrs.Name,
					fmt.Errorf("this name may not be used, please change the resource name"))
			}
		}
	}
	return nil
}
