package aggregator

import (
	"fmt"

	"github.com/apikit-dev/apikit/meta"
)

// The API group and version APIServices are served in.
const (
	GroupName = "apiregistration.k8s.io"
	Version   = "v1"
)

// Resource is the APIService resource.
var Resource = meta.GroupResource{Group: GroupName, Resource: "apiservices"}

// APIService says which server serves one group-version: a service of the
// cluster (a remote delegated server, reached through the ServiceResolver)
// or, without a service, the aggregator's own chain. Its name is
// <version>.<group>. It is kube-aggregator's apiregistration.k8s.io/v1
// APIService, field for field.
type APIService struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`
	// Spec says where the group-version is served.
	Spec APIServiceSpec `json:"spec,omitempty" optional:"true" description:"Spec contains information for locating and communicating with a server" protobuf:"2"`
	// Status says whether it is reachable.
	Status APIServiceStatus `json:"status,omitempty" optional:"true" description:"Status contains derived information about an API server" protobuf:"3"`
}

// ServiceReference names a port of a Service.
type ServiceReference struct {
	// Namespace and Name of the Service.
	Namespace string `json:"namespace,omitempty" optional:"true" description:"Namespace is the namespace of the service" protobuf:"1"`
	Name      string `json:"name,omitempty" optional:"true" description:"Name is the name of the service" protobuf:"2"`
	// Port is the Service's port; 443 when unset.
	Port *int32 `json:"port,omitempty" optional:"true" description:"If specified, the port on the service that hosting webhook. Default to 443 for backward compatibility. port should be a valid port number (1-65535, inclusive)." protobuf:"3"`
}

// PortOr443 returns the port, or 443 when it is unset.
func (s *ServiceReference) PortOr443() int32 {
	if s.Port == nil {
		return 443
	}
	return *s.Port
}

// APIServiceSpec locates a group-version's server and orders it among
// the others.
type APIServiceSpec struct {
	// Service is where the group-version is served; nil means by the
	// aggregator itself (a local APIService).
	Service *ServiceReference `json:"service,omitempty" optional:"true" description:"Service is a reference to the service for this API server.  It must communicate on port 443. If the Service is nil, that means the handling for the API groupversion is handled locally on this server. The call will simply delegate to the normal handler chain to be fulfilled." protobuf:"1"`
	// Group and Version are the group-version served.
	Group   string `json:"group,omitempty" optional:"true" description:"Group is the API group name this server hosts" protobuf:"2"`
	Version string `json:"version,omitempty" optional:"true" description:"Version is the API version this server hosts.  For example, \"v1\"" protobuf:"3"`
	// InsecureSkipTLSVerify turns off the verification of the server's
	// certificate. Strongly discouraged: use CABundle.
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty" optional:"true" description:"InsecureSkipTLSVerify disables TLS certificate verification when communicating with this server. This is strongly discouraged.  You should use the CABundle instead." protobuf:"4"`
	// CABundle is a PEM bundle that verifies the server's certificate.
	CABundle []byte `json:"caBundle,omitempty" optional:"true" format:"byte" description:"CABundle is a PEM encoded CA bundle which will be used to validate an API server's serving certificate. If unspecified, system trust roots on the apiserver are used." protobuf:"5"`
	// GroupPriorityMinimum orders groups (higher first) in discovery.
	GroupPriorityMinimum int32 `json:"groupPriorityMinimum" description:"GroupPriorityMinimum is the priority this group should have at least. Higher priority means that the group is preferred by clients over lower priority ones. Note that other versions of this group might specify even higher GroupPriorityMinimum values such that the whole group gets a higher priority. The primary sort is based on GroupPriorityMinimum, ordered highest number to lowest (20 before 10). The secondary sort is based on the alphabetical comparison of the name of the object (v1.bar before v1.foo)" protobuf:"7"`
	// VersionPriority orders the versions of a group (higher first).
	VersionPriority int32 `json:"versionPriority" description:"VersionPriority controls the ordering of this API version inside of its group.  Must be greater than zero. The primary sort is based on VersionPriority, ordered highest to lowest (20 before 10). Since it's inside of a group, the number can be small, probably in the 10s. In case of equal version priorities, the version string will be used to compute the order inside a group. If the version string is \"kube-like\", it will sort above non \"kube-like\" version strings, which are ordered lexicographically." protobuf:"8"`
}

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Available is the condition type the availability controller sets.
const Available = "Available"

// Reasons of the Available condition, kube-aggregator's.
const (
	// ReasonLocal: served by the aggregator's own chain.
	ReasonLocal = "Local"
	// ReasonPassed: the backend answered its discovery document.
	ReasonPassed = "Passed"
	// ReasonServiceNotFound: the resolver does not know the Service.
	ReasonServiceNotFound = "ServiceNotFound"
	// ReasonServicePortError: the Service has no such port.
	ReasonServicePortError = "ServicePortError"
	// ReasonMissingEndpoints: the Service has no ready endpoint.
	ReasonMissingEndpoints = "MissingEndpoints"
	// ReasonServiceAccessError: the Service could not be looked up.
	ReasonServiceAccessError = "ServiceAccessError"
	// ReasonFailedDiscoveryCheck: the backend did not answer its discovery
	// document (unreachable, refused, an error status).
	ReasonFailedDiscoveryCheck = "FailedDiscoveryCheck"
)

// APIServiceCondition is one condition of an APIService.
type APIServiceCondition struct {
	Type               string          `json:"type" description:"Type is the type of the condition." protobuf:"1"`
	Status             ConditionStatus `json:"status" description:"Status is the status of the condition. Can be True, False, Unknown." protobuf:"2"`
	LastTransitionTime meta.Time       `json:"lastTransitionTime,omitempty" optional:"true" description:"Last time the condition transitioned from one status to another." protobuf:"3"`
	Reason             string          `json:"reason,omitempty" optional:"true" description:"Unique, one-word, CamelCase reason for the condition's last transition." protobuf:"4"`
	Message            string          `json:"message,omitempty" optional:"true" description:"Human-readable message indicating details about last transition." protobuf:"5"`
}

// APIServiceStatus is what the aggregator observed.
type APIServiceStatus struct {
	Conditions []APIServiceCondition `json:"conditions,omitempty" optional:"true" patchStrategy:"merge" patchMergeKey:"type" listType:"map" listMapKeys:"type" description:"Current service state of apiService." protobuf:"1"`
}

// Condition returns the condition of type t, or nil.
func (s *APIServiceStatus) Condition(t string) *APIServiceCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// IsAvailable reports whether the Available condition is True.
func (a *APIService) IsAvailable() bool {
	c := a.Status.Condition(Available)
	return c != nil && c.Status == ConditionTrue
}

// GroupVersion is the group-version the APIService is for.
func (a *APIService) GroupVersion() meta.GroupVersion { return a.Spec.GroupVersion() }

// GroupVersion is the group-version the spec is for.
func (s *APIServiceSpec) GroupVersion() meta.GroupVersion {
	return meta.GroupVersion{Group: s.Group, Version: s.Version}
}

// APIServiceName is the name an APIService for gv must have:
// <version>.<group>.
func APIServiceName(gv meta.GroupVersion) string {
	return fmt.Sprintf("%s.%s", gv.Version, gv.Group)
}

// setCondition sets c on s, keeping the transition time when the status
// does not change, and reports whether anything changed.
func setCondition(s *APIServiceStatus, c APIServiceCondition) bool {
	old := s.Condition(c.Type)
	if old == nil {
		s.Conditions = append(s.Conditions, c)
		return true
	}
	if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return false
	}
	if old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	*old = c
	return true
}
