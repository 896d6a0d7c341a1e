package meta

// APIVersions lists the versions of the core API group at /api.
type APIVersions struct {
	TypeMeta                   `json:",inline"`
	Versions                   []string                    `json:"versions"`
	ServerAddressByClientCIDRs []ServerAddressByClientCIDR `json:"serverAddressByClientCIDRs"`
}

// ServerAddressByClientCIDR tells clients in a network which address to use.
type ServerAddressByClientCIDR struct {
	ClientCIDR    string `json:"clientCIDR"`
	ServerAddress string `json:"serverAddress"`
}

// APIGroupList lists the API groups at /apis.
type APIGroupList struct {
	TypeMeta `json:",inline"`
	Groups   []APIGroup `json:"groups"`
}

// APIGroup describes one API group and its versions.
type APIGroup struct {
	TypeMeta                   `json:",inline"`
	Name                       string                      `json:"name"`
	Versions                   []GroupVersionForDiscovery  `json:"versions"`
	PreferredVersion           GroupVersionForDiscovery    `json:"preferredVersion,omitempty"`
	ServerAddressByClientCIDRs []ServerAddressByClientCIDR `json:"serverAddressByClientCIDRs,omitempty"`
}

// GroupVersionForDiscovery names one version of a group.
type GroupVersionForDiscovery struct {
	GroupVersion string `json:"groupVersion"`
	Version      string `json:"version"`
}

// APIResourceList lists the resources of one group-version.
type APIResourceList struct {
	TypeMeta     `json:",inline"`
	GroupVersion string        `json:"groupVersion"`
	APIResources []APIResource `json:"resources"`
}

// APIResource describes one resource or subresource ("flunders/status").
type APIResource struct {
	Name               string   `json:"name"`
	SingularName       string   `json:"singularName"`
	Namespaced         bool     `json:"namespaced"`
	Group              string   `json:"group,omitempty"`
	Version            string   `json:"version,omitempty"`
	Kind               string   `json:"kind"`
	Verbs              []string `json:"verbs"`
	ShortNames         []string `json:"shortNames,omitempty"`
	Categories         []string `json:"categories,omitempty"`
	StorageVersionHash string   `json:"storageVersionHash,omitempty"`
}

// APIGroupDiscoveryList is aggregated discovery (apidiscovery.k8s.io/v2): all
// groups, versions and resources in one document.
type APIGroupDiscoveryList struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata"`
	Items    []APIGroupDiscovery `json:"items"`
}

// APIGroupDiscovery is one group in aggregated discovery.
type APIGroupDiscovery struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Versions   []APIVersionDiscovery `json:"versions,omitempty"`
}

// Discovery freshness values.
const (
	DiscoveryFresh = "Current"
	DiscoveryStale = "Stale"
)

// APIVersionDiscovery is one version of a group in aggregated discovery.
type APIVersionDiscovery struct {
	Version   string                 `json:"version"`
	Resources []APIResourceDiscovery `json:"resources,omitempty"`
	Freshness string                 `json:"freshness,omitempty"`
}

// Resource scopes in aggregated discovery.
const (
	ScopeNamespace = "Namespaced"
	ScopeCluster   = "Cluster"
)

// APIResourceDiscovery is one resource in aggregated discovery.
type APIResourceDiscovery struct {
	Resource         string                    `json:"resource"`
	ResponseKind     *GroupVersionKindJSON     `json:"responseKind,omitempty"`
	Scope            string                    `json:"scope"`
	SingularResource string                    `json:"singularResource"`
	Verbs            []string                  `json:"verbs"`
	ShortNames       []string                  `json:"shortNames,omitempty"`
	Categories       []string                  `json:"categories,omitempty"`
	Subresources     []APISubresourceDiscovery `json:"subresources,omitempty"`
}

// APISubresourceDiscovery is one subresource in aggregated discovery.
type APISubresourceDiscovery struct {
	Subresource   string                 `json:"subresource"`
	ResponseKind  *GroupVersionKindJSON  `json:"responseKind,omitempty"`
	AcceptedTypes []GroupVersionKindJSON `json:"acceptedTypes,omitempty"`
	Verbs         []string               `json:"verbs"`
}

// GroupVersionKindJSON is a GroupVersionKind in its JSON form.
type GroupVersionKindJSON struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}
