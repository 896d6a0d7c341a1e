// Package serviceaccounts serves the core group's serviceaccounts
// (/api/v1/namespaces/{namespace}/serviceaccounts) and their token
// subresource: a TokenRequest (authentication.k8s.io/v1) posted there
// returns a token bound to the service account's uid, which the server's
// service-account authenticator accepts until it expires or the service
// account is deleted (Lookup). `kubectl create token NAME` posts one.
package serviceaccounts

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/authn/serviceaccount"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// ServiceAccount is core/v1 ServiceAccount.
type ServiceAccount struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`

	Secrets                      []ObjectReference      `json:"secrets,omitempty" patchStrategy:"merge" patchMergeKey:"name" description:"Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use." protobuf:"2"`
	ImagePullSecrets             []LocalObjectReference `json:"imagePullSecrets,omitempty" description:"ImagePullSecrets is a list of references to secrets in the same namespace to use for pulling any images in pods that reference this ServiceAccount." protobuf:"3"`
	AutomountServiceAccountToken *bool                  `json:"automountServiceAccountToken,omitempty" description:"AutomountServiceAccountToken indicates whether pods running as this service account should have an API token automatically mounted." protobuf:"4"`
}

// SwaggerDoc describes ServiceAccount in OpenAPI.
func (ServiceAccount) SwaggerDoc() map[string]string {
	return map[string]string{"": "ServiceAccount binds together: * a name, understood by users, and perhaps by peripheral systems, for an identity * a principal that can be authenticated and authorized * a set of secrets"}
}

// ObjectReference is core/v1 ObjectReference.
type ObjectReference struct {
	Kind            string `json:"kind,omitempty" description:"Kind of the referent." protobuf:"1"`
	Namespace       string `json:"namespace,omitempty" description:"Namespace of the referent." protobuf:"2"`
	Name            string `json:"name,omitempty" description:"Name of the referent." protobuf:"3"`
	UID             string `json:"uid,omitempty" description:"UID of the referent." protobuf:"4"`
	APIVersion      string `json:"apiVersion,omitempty" description:"API version of the referent." protobuf:"5"`
	ResourceVersion string `json:"resourceVersion,omitempty" description:"Specific resourceVersion to which this reference is made, if any." protobuf:"6"`
	FieldPath       string `json:"fieldPath,omitempty" description:"If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement." protobuf:"7"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	Name string `json:"name,omitempty" description:"Name of the referent." protobuf:"1"`
}

// New returns the serviceaccounts store on the storage f gives it.
func New(f storage.Factory) (*registry.Store[*ServiceAccount], error) {
	resource := meta.GroupResource{Resource: "serviceaccounts"}
	st, err := f.For(resource)
	if err != nil {
		return nil, fmt.Errorf("serviceaccounts: %w", err)
	}
	return registry.NewStore(registry.Options[*ServiceAccount]{
		Resource:        resource,
		Kind:            "ServiceAccount",
		NoGeneration:    true,
		ShortNames:      []string{"sa"},
		NamespaceScoped: true,
		StorageVersion:  "v1",
		Strategy:        registry.DefaultStrategy[*ServiceAccount]{},
		Storage:         st,
		Columns: []registry.Column[*ServiceAccount]{
			{Name: "Secrets", Type: "string", Description: "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
				Value: func(s *ServiceAccount) any { return int64(len(s.Secrets)) }},
		},
	})
}

// Lookup reads service accounts from store for the authenticator
// (serviceaccount.Authenticator.SetLookup), from the watch cache when the
// store has one, as kube-apiserver's validator reads its informer.
func Lookup(store *registry.Store[*ServiceAccount]) serviceaccount.Lookup {
	return func(ctx context.Context, namespace, name string) (serviceaccount.Account, bool, error) {
		sa, _, err := store.Get(ctx, namespace, name, meta.GetOptions{ResourceVersion: "0"})
		switch {
		case meta.IsNotFound(err):
			return serviceaccount.Account{}, false, nil
		case err != nil:
			return serviceaccount.Account{}, false, err
		}
		return serviceaccount.Account{UID: sa.UID, Terminating: sa.DeletionTimestamp != nil}, true, nil
	}
}
