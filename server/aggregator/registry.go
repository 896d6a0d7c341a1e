package aggregator

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// NewStore returns the store of APIServices on the storage f hands out
// for them, under kube-apiserver's key (/apiregistration.k8s.io/apiservices/<name>),
// with kube-aggregator's validation and table (SERVICE, AVAILABLE).
func NewStore(f storage.Factory) (*registry.Store[*APIService], error) {
	s, err := f.For(Resource)
	if err != nil {
		return nil, fmt.Errorf("aggregator: storage for %s: %w", Resource, err)
	}
	return registry.NewStore(registry.Options[*APIService]{
		Resource:       Resource,
		Kind:           "APIService",
		StorageVersion: Version,
		Strategy:       apiServiceStrategy{},
		Storage:        s,
		// kube-aggregator's: one path segment, <version>.<group>
		// (ValidateAPIService), so the core group's is "v1.".
		NameValidator:     meta.ValidatePathSegmentName,
		StatusSubresource: true,
		Columns: []registry.Column[*APIService]{
			{Name: "Service", Type: "string", Description: "The reference to the service that hosts this API endpoint.", Value: func(a *APIService) any {
				if a.Spec.Service == nil {
					return "Local"
				}
				return a.Spec.Service.Namespace + "/" + a.Spec.Service.Name
			}},
			{Name: "Available", Type: "string", Description: "Whether this service is available.", Value: func(a *APIService) any {
				c := a.Status.Condition(Available)
				switch {
				case c == nil:
					return "Unknown"
				case c.Status == ConditionTrue:
					return string(c.Status)
				}
				return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
			}},
		},
	})
}

// apiServiceStrategy validates APIServices as kube-aggregator does, and
// marks local ones available on create.
type apiServiceStrategy struct {
	registry.DefaultStrategy[*APIService]
}

func (apiServiceStrategy) PrepareForCreate(_ context.Context, a *APIService) {
	if a.Spec.Service == nil {
		setCondition(&a.Status, localCondition())
	}
}

func (apiServiceStrategy) Validate(_ context.Context, a *APIService) meta.FieldErrors {
	return ValidateAPIService(a)
}

func (apiServiceStrategy) ValidateUpdate(_ context.Context, a, _ *APIService) meta.FieldErrors {
	return ValidateAPIService(a)
}

func (apiServiceStrategy) ValidateStatusUpdate(_ context.Context, a, _ *APIService) meta.FieldErrors {
	var errs meta.FieldErrors
	for i, c := range a.Status.Conditions {
		p := meta.NewPath("status", "conditions").Index(i)
		if c.Type == "" {
			errs = append(errs, meta.Required(p.Child("type"), ""))
		}
		switch c.Status {
		case ConditionTrue, ConditionFalse, ConditionUnknown:
		default:
			errs = append(errs, meta.NotSupported(p.Child("status"), c.Status, []string{string(ConditionTrue), string(ConditionFalse), string(ConditionUnknown)}))
		}
	}
	return errs
}

// localCondition is the Available condition of a local APIService.
func localCondition() APIServiceCondition {
	return APIServiceCondition{Type: Available, Status: ConditionTrue, LastTransitionTime: meta.Now(),
		Reason: ReasonLocal, Message: "Local APIServices are always available"}
}

// ValidateAPIService checks an APIService with kube-aggregator's rules and
// messages: its name is <version>.<group>, the priorities are in range,
// and a service comes with a valid reference and either a CA bundle or
// insecureSkipTLSVerify, never both.
func ValidateAPIService(a *APIService) meta.FieldErrors {
	var errs meta.FieldErrors
	spec := meta.NewPath("spec")
	if want := a.Spec.Version + "." + a.Spec.Group; a.Name != want {
		errs = append(errs, meta.Invalid(meta.NewPath("metadata", "name"), a.Name, "must be `spec.version+\".\"+spec.group`: \""+want+"\""))
	}
	if a.Spec.Group == "" && a.Spec.Version != "v1" {
		errs = append(errs, meta.Required(spec.Child("group"), "only v1 may have an empty group and it better be legacy kube"))
	}
	if a.Spec.Group != "" {
		for _, msg := range meta.ValidateDNS1123Subdomain(a.Spec.Group) {
			errs = append(errs, meta.Invalid(spec.Child("group"), a.Spec.Group, msg))
		}
	}
	if a.Spec.Version == "" {
		errs = append(errs, meta.Required(spec.Child("version"), ""))
	} else {
		for _, msg := range meta.ValidateDNS1123Label(a.Spec.Version) {
			errs = append(errs, meta.Invalid(spec.Child("version"), a.Spec.Version, msg))
		}
	}
	if p := a.Spec.GroupPriorityMinimum; p <= 0 || p > 20000 {
		errs = append(errs, meta.Invalid(spec.Child("groupPriorityMinimum"), p, "must be positive and less than 20000"))
	}
	if p := a.Spec.VersionPriority; p <= 0 || p > 1000 {
		errs = append(errs, meta.Invalid(spec.Child("versionPriority"), p, "must be positive and less than 1000"))
	}
	svc := a.Spec.Service
	if svc == nil {
		if len(a.Spec.CABundle) != 0 {
			errs = append(errs, meta.Invalid(spec.Child("caBundle"), fmt.Sprintf("%d bytes", len(a.Spec.CABundle)), "local APIServices may not have a caBundle"))
		}
		if a.Spec.InsecureSkipTLSVerify {
			errs = append(errs, meta.Invalid(spec.Child("insecureSkipTLSVerify"), true, "local APIServices may not have insecureSkipTLSVerify"))
		}
		return errs
	}
	sp := spec.Child("service")
	if svc.Namespace == "" {
		errs = append(errs, meta.Required(sp.Child("namespace"), ""))
	} else {
		for _, msg := range meta.ValidateDNS1123Label(svc.Namespace) {
			errs = append(errs, meta.Invalid(sp.Child("namespace"), svc.Namespace, msg))
		}
	}
	if svc.Name == "" {
		errs = append(errs, meta.Required(sp.Child("name"), ""))
	} else {
		for _, msg := range meta.ValidateDNS1123Label(svc.Name) {
			errs = append(errs, meta.Invalid(sp.Child("name"), svc.Name, msg))
		}
	}
	if svc.Port != nil && (*svc.Port < 1 || *svc.Port > 65535) {
		errs = append(errs, meta.Invalid(sp.Child("port"), *svc.Port, "port is not valid: must be between 1 and 65535, inclusive"))
	}
	if a.Spec.InsecureSkipTLSVerify && len(a.Spec.CABundle) > 0 {
		errs = append(errs, meta.Invalid(spec.Child("insecureSkipTLSVerify"), true, "may not be true if caBundle is present"))
	}
	return errs
}
