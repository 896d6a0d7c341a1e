package extensions

import (
	"encoding/json"

	"github.com/apikit-dev/apikit/meta"
)

// The API group and version CustomResourceDefinitions are served in.
const (
	GroupName = "apiextensions.k8s.io"
	Version   = "v1"
)

// Resource is the CustomResourceDefinition resource.
var Resource = meta.GroupResource{Group: GroupName, Resource: "customresourcedefinitions"}

// CustomResourceDefinition defines a resource served by the extensions
// server: apiextensions.k8s.io/v1 CustomResourceDefinition, field for
// field as kube-apiserver writes it. Its name is <plural>.<group>.
type CustomResourceDefinition struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	// Spec describes how the user wants the resources to appear.
	Spec CustomResourceDefinitionSpec `json:"spec" description:"spec describes how the user wants the resources to appear" protobuf:"2"`
	// Status is what the server made of the spec.
	Status CustomResourceDefinitionStatus `json:"status,omitempty" optional:"true" description:"status indicates the actual state of the CustomResourceDefinition" protobuf:"3"`
}

// CustomResourceDefinitionSpec describes how a user wants their resource to appear.
type CustomResourceDefinitionSpec struct {
	Group string                        `json:"group" description:"group is the API group of the defined custom resource. The custom resources are served under /apis/<group>/.... Must match the name of the CustomResourceDefinition (in the form <names.plural>.<group>)." protobuf:"1"`
	Names CustomResourceDefinitionNames `json:"names" description:"names specify the resource and kind names for the custom resource." protobuf:"3"`
	Scope ResourceScope                 `json:"scope" description:"scope indicates whether the defined custom resource is cluster- or namespace-scoped. Allowed values are Cluster and Namespaced." protobuf:"4"`
	// Versions are the served versions; exactly one is the storage version.
	Versions   []CustomResourceDefinitionVersion `json:"versions" description:"versions is the list of all API versions of the defined custom resource." protobuf:"7"`
	Conversion *CustomResourceConversion         `json:"conversion,omitempty" optional:"true" description:"conversion defines conversion settings for the CRD." protobuf:"9"`
	// PreserveUnknownFields is refused as true in v1 (kept for the wire).
	PreserveUnknownFields bool `json:"preserveUnknownFields,omitempty" optional:"true" description:"preserveUnknownFields indicates that object fields which are not specified in the OpenAPI schema should be preserved when persisting to storage. apiVersion, kind, metadata and known fields inside metadata are always preserved." protobuf:"10"`
}

// CustomResourceDefinitionNames are the names of a custom resource.
type CustomResourceDefinitionNames struct {
	Plural     string   `json:"plural" description:"plural is the plural name of the resource to serve." protobuf:"1"`
	Singular   string   `json:"singular,omitempty" optional:"true" description:"singular is the singular name of the resource. It must be all lowercase. Defaults to lowercased kind." protobuf:"2"`
	ShortNames []string `json:"shortNames,omitempty" optional:"true" description:"shortNames are short names for the resource, exposed in API discovery documents, and used by clients to support invocations like kubectl get <shortname>." protobuf:"3"`
	Kind       string   `json:"kind" description:"kind is the serialized kind of the resource. It is normally CamelCase and singular." protobuf:"4"`
	ListKind   string   `json:"listKind,omitempty" optional:"true" description:"listKind is the serialized kind of the list for this resource. Defaults to \"kindList\"." protobuf:"5"`
	Categories []string `json:"categories,omitempty" optional:"true" description:"categories is a list of grouped resources this custom resource belongs to (e.g. 'all')." protobuf:"6"`
}

// ResourceScope is Cluster or Namespaced.
type ResourceScope string

// The scopes of a custom resource.
const (
	ClusterScoped   ResourceScope = "Cluster"
	NamespaceScoped ResourceScope = "Namespaced"
)

// CustomResourceDefinitionVersion describes one version of a custom resource.
type CustomResourceDefinitionVersion struct {
	Name                     string                           `json:"name" description:"name is the version name, e.g. v1, v2beta1." protobuf:"1"`
	Served                   bool                             `json:"served" description:"served is a flag enabling/disabling this version from being served via REST APIs" protobuf:"2"`
	Storage                  bool                             `json:"storage" description:"storage indicates this version should be used when persisting custom resources to storage. There must be exactly one version with storage=true." protobuf:"3"`
	Deprecated               bool                             `json:"deprecated,omitempty" optional:"true" description:"deprecated indicates this version of the custom resource API is deprecated." protobuf:"7"`
	DeprecationWarning       *string                          `json:"deprecationWarning,omitempty" optional:"true" description:"deprecationWarning overrides the default warning returned to API clients." protobuf:"8"`
	Schema                   *CustomResourceValidation        `json:"schema,omitempty" optional:"true" description:"schema describes the schema used for validation, pruning, and defaulting of this version of the custom resource." protobuf:"4"`
	Subresources             *CustomResourceSubresources      `json:"subresources,omitempty" optional:"true" description:"subresources specify what subresources this version of the defined custom resource have." protobuf:"5"`
	AdditionalPrinterColumns []CustomResourceColumnDefinition `json:"additionalPrinterColumns,omitempty" optional:"true" description:"additionalPrinterColumns specifies additional columns returned in Table output. If no columns are specified, a single column displaying the age of the custom resource is used." protobuf:"6"`
	SelectableFields         []SelectableField                `json:"selectableFields,omitempty" optional:"true" description:"selectableFields specifies paths to fields that may be used as field selectors." protobuf:"9"`
}

// CustomResourceValidation holds a version's schema.
type CustomResourceValidation struct {
	// OpenAPIV3Schema is the schema as the client wrote it (a JSON
	// object), read into the schema model by schema.FromOpenAPIV3.
	OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema,omitempty" optional:"true" description:"openAPIV3Schema is the OpenAPI v3 schema to use for validation and pruning." protobuf:"1,as=JSONSchemaProps"`
}

// CustomResourceSubresources are the status and scale subresources.
type CustomResourceSubresources struct {
	Status *CustomResourceSubresourceStatus `json:"status,omitempty" optional:"true" description:"status indicates the custom resource should serve a /status subresource." protobuf:"1"`
	Scale  *CustomResourceSubresourceScale  `json:"scale,omitempty" optional:"true" description:"scale indicates the custom resource should serve a /scale subresource that returns an autoscaling/v1 Scale object." protobuf:"2"`
}

// CustomResourceSubresourceStatus enables the status subresource; it has no fields.
type CustomResourceSubresourceStatus struct{}

// CustomResourceSubresourceScale says where a custom resource keeps what
// the scale subresource shows.
type CustomResourceSubresourceScale struct {
	SpecReplicasPath   string  `json:"specReplicasPath" description:"specReplicasPath defines the JSON path inside of a custom resource that corresponds to Scale spec.replicas." protobuf:"1"`
	StatusReplicasPath string  `json:"statusReplicasPath" description:"statusReplicasPath defines the JSON path inside of a custom resource that corresponds to Scale status.replicas." protobuf:"2"`
	LabelSelectorPath  *string `json:"labelSelectorPath,omitempty" optional:"true" description:"labelSelectorPath defines the JSON path inside of a custom resource that corresponds to Scale status.selector." protobuf:"3"`
}

// CustomResourceColumnDefinition is one additional printer column.
type CustomResourceColumnDefinition struct {
	Name        string `json:"name" description:"name is a human readable name for the column." protobuf:"1"`
	Type        string `json:"type" description:"type is an OpenAPI type definition for this column." protobuf:"2"`
	Format      string `json:"format,omitempty" optional:"true" description:"format is an optional OpenAPI type definition for this column." protobuf:"3"`
	Description string `json:"description,omitempty" optional:"true" description:"description is a human readable description of this column." protobuf:"4"`
	Priority    int32  `json:"priority,omitempty" optional:"true" description:"priority is an integer defining the relative importance of this column compared to others." protobuf:"5"`
	JSONPath    string `json:"jsonPath" description:"jsonPath is a simple JSON path (i.e. with array notation) which is evaluated against each custom resource to produce the value for this column." protobuf:"6"`
}

// SelectableField is a field usable in field selectors.
type SelectableField struct {
	JSONPath string `json:"jsonPath" description:"jsonPath is a simple JSON path which is evaluated against each custom resource to produce a field selector value." protobuf:"1"`
}

// CustomResourceConversion says how versions convert.
type CustomResourceConversion struct {
	Strategy ConversionStrategyType `json:"strategy" description:"strategy specifies how custom resources are converted between versions. Allowed values are: - None, - Webhook." protobuf:"1"`
	Webhook  *WebhookConversion     `json:"webhook,omitempty" optional:"true" description:"webhook describes how to call the conversion webhook. Required when strategy is set to Webhook." protobuf:"2"`
}

// ConversionStrategyType is None or Webhook.
type ConversionStrategyType string

// The conversion strategies.
const (
	NoneConverter    ConversionStrategyType = "None"
	WebhookConverter ConversionStrategyType = "Webhook"
)

// WebhookConversion is a conversion webhook.
type WebhookConversion struct {
	ClientConfig             *WebhookClientConfig `json:"clientConfig,omitempty" optional:"true" description:"clientConfig is the instructions for how to call the webhook if strategy is Webhook." protobuf:"2"`
	ConversionReviewVersions []string             `json:"conversionReviewVersions" description:"conversionReviewVersions is an ordered list of preferred ConversionReview versions the Webhook expects." protobuf:"3"`
}

// WebhookClientConfig says how to reach a webhook.
type WebhookClientConfig struct {
	URL      *string           `json:"url,omitempty" optional:"true" description:"url gives the location of the webhook, in standard URL form (scheme://host:port/path)." protobuf:"3"`
	Service  *ServiceReference `json:"service,omitempty" optional:"true" description:"service is a reference to the service for this webhook." protobuf:"1"`
	CABundle []byte            `json:"caBundle,omitempty" optional:"true" description:"caBundle is a PEM encoded CA bundle which will be used to validate the webhook's server certificate." protobuf:"2"`
}

// ServiceReference names a Service port and path.
type ServiceReference struct {
	Namespace string  `json:"namespace" description:"namespace is the namespace of the service." protobuf:"1"`
	Name      string  `json:"name" description:"name is the name of the service." protobuf:"2"`
	Path      *string `json:"path,omitempty" optional:"true" description:"path is an optional URL path at which the webhook will be contacted." protobuf:"3"`
	Port      *int32  `json:"port,omitempty" optional:"true" description:"port is an optional service port at which the webhook will be contacted. Defaults to 443." protobuf:"4"`
}

// CustomResourceDefinitionStatus is what the server made of a CRD.
type CustomResourceDefinitionStatus struct {
	Conditions     []CustomResourceDefinitionCondition `json:"conditions,omitempty" optional:"true" description:"conditions indicate state for particular aspects of a CustomResourceDefinition" protobuf:"1"`
	AcceptedNames  CustomResourceDefinitionNames       `json:"acceptedNames" description:"acceptedNames are the names that are actually being used to serve discovery." protobuf:"2"`
	StoredVersions []string                            `json:"storedVersions" description:"storedVersions lists all versions of CustomResources that were ever persisted." protobuf:"3"`
}

// CustomResourceDefinitionCondition is one condition of a CRD.
type CustomResourceDefinitionCondition struct {
	Type               ConditionType   `json:"type" description:"type is the type of the condition. Types include Established, NamesAccepted and Terminating." protobuf:"1"`
	Status             ConditionStatus `json:"status" description:"status is the status of the condition. Can be True, False, Unknown." protobuf:"2"`
	LastTransitionTime meta.Time       `json:"lastTransitionTime,omitempty" optional:"true" description:"lastTransitionTime last time the condition transitioned from one status to another." protobuf:"3"`
	Reason             string          `json:"reason,omitempty" optional:"true" description:"reason is a unique, one-word, CamelCase reason for the condition's last transition." protobuf:"4"`
	Message            string          `json:"message,omitempty" optional:"true" description:"message is a human-readable message indicating details about last transition." protobuf:"5"`
}

// ConditionType names a CRD condition.
type ConditionType string

// The CRD conditions kube-apiserver sets.
const (
	Established         ConditionType = "Established"
	NamesAccepted       ConditionType = "NamesAccepted"
	NonStructuralSchema ConditionType = "NonStructuralSchema"
	Terminating         ConditionType = "Terminating"
)

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// The condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// CleanupFinalizer is the finalizer under which the server deletes a
// CRD's custom resources before the CRD itself goes.
const CleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// Condition returns the condition of type t, or nil.
func (s *CustomResourceDefinitionStatus) Condition(t ConditionType) *CustomResourceDefinitionCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// IsTrue reports whether the condition of type t is True.
func (s *CustomResourceDefinitionStatus) IsTrue(t ConditionType) bool {
	c := s.Condition(t)
	return c != nil && c.Status == ConditionTrue
}

// SetCondition sets c, keeping its lastTransitionTime when the status is
// unchanged; it reports whether anything changed.
func (s *CustomResourceDefinitionStatus) SetCondition(c CustomResourceDefinitionCondition, now meta.Time) bool {
	old := s.Condition(c.Type)
	if old == nil {
		c.LastTransitionTime = now
		s.Conditions = append(s.Conditions, c)
		return true
	}
	if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return false
	}
	if old.Status != c.Status {
		old.LastTransitionTime = now
	}
	old.Status, old.Reason, old.Message = c.Status, c.Reason, c.Message
	return true
}

// RemoveCondition removes the condition of type t; it reports whether there was one.
func (s *CustomResourceDefinitionStatus) RemoveCondition(t ConditionType) bool {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			s.Conditions = append(s.Conditions[:i], s.Conditions[i+1:]...)
			return true
		}
	}
	return false
}

// StorageVersion returns the name of the version marked storage.
func (spec *CustomResourceDefinitionSpec) StorageVersion() string {
	for _, v := range spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// Version returns the version called name.
func (spec *CustomResourceDefinitionSpec) Version(name string) *CustomResourceDefinitionVersion {
	for i := range spec.Versions {
		if spec.Versions[i].Name == name {
			return &spec.Versions[i]
		}
	}
	return nil
}
