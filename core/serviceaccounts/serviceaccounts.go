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

	Secrets                      []ObjectReference      `json:"secrets,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"2"`
	ImagePullSecrets             []LocalObjectReference `json:"imagePullSecrets,omitempty" listType:"atomic" protobuf:"3"`
	AutomountServiceAccountToken *bool                  `json:"automountServiceAccountToken,omitempty" protobuf:"4"`
}

// SwaggerDoc describes ServiceAccount in OpenAPI, in kube-apiserver's words.
func (ServiceAccount) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                             "ServiceAccount binds together: * a name, understood by users, and perhaps by peripheral systems, for an identity * a principal that can be authenticated and authorized * a set of secrets",
		"automountServiceAccountToken": "AutomountServiceAccountToken indicates whether pods running as this service account should have an API token automatically mounted. Can be overridden at the pod level.",
		"imagePullSecrets":             "ImagePullSecrets is a list of references to secrets in the same namespace to use for pulling any images in pods that reference this ServiceAccount. ImagePullSecrets are distinct from Secrets because Secrets can be mounted in the pod, but ImagePullSecrets are only accessed by the kubelet. More info: https://kubernetes.io/docs/concepts/containers/images/#specifying-imagepullsecrets-on-a-pod",
		"secrets":                      "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret",
	}
}

// ListSwaggerDoc describes ServiceAccountList in OpenAPI, in kube-apiserver's words.
func (ServiceAccount) ListSwaggerDoc() map[string]string {
	return map[string]string{
		"":         "ServiceAccountList is a list of ServiceAccount objects",
		"items":    "List of ServiceAccounts. More info: https://kubernetes.io/docs/tasks/configure-pod-container/configure-service-account/",
		"metadata": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
	}
}

// ObjectReference is core/v1 ObjectReference.
type ObjectReference struct {
	Kind            string `json:"kind,omitempty" protobuf:"1"`
	Namespace       string `json:"namespace,omitempty" protobuf:"2"`
	Name            string `json:"name,omitempty" protobuf:"3"`
	UID             string `json:"uid,omitempty" protobuf:"4"`
	APIVersion      string `json:"apiVersion,omitempty" protobuf:"5"`
	ResourceVersion string `json:"resourceVersion,omitempty" protobuf:"6"`
	FieldPath       string `json:"fieldPath,omitempty" protobuf:"7"`
}

// SwaggerDoc describes ObjectReference in OpenAPI, in kube-apiserver's words.
func (ObjectReference) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                "ObjectReference contains enough information to let you inspect or modify the referred object.",
		"apiVersion":      "API version of the referent.",
		"fieldPath":       "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
		"kind":            "Kind of the referent. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
		"name":            "Name of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#names",
		"namespace":       "Namespace of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/",
		"resourceVersion": "Specific resourceVersion to which this reference is made, if any. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency",
		"uid":             "UID of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#uids",
	}
}

// AtomicStruct marks ObjectReference atomic, as kube's +structType=atomic
// does: server-side apply owns a reference whole.
func (ObjectReference) AtomicStruct() {}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	Name string `json:"name,omitempty" protobuf:"1"`
}

// AtomicStruct marks LocalObjectReference atomic, as kube's
// +structType=atomic does.
func (LocalObjectReference) AtomicStruct() {}

// SwaggerDoc describes LocalObjectReference in OpenAPI, in kube-apiserver's words.
func (LocalObjectReference) SwaggerDoc() map[string]string {
	return map[string]string{
		"":     "LocalObjectReference contains enough information to let you locate the referenced object inside the same namespace.",
		"name": "Name of the referent. This field is effectively required, but due to backwards compatibility is allowed to be empty. Instances of this type with an empty value here are almost certainly wrong. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#names",
	}
}

// New returns the serviceaccounts store on the storage f gives it.
func New(f storage.Factory) (*registry.Store[*ServiceAccount], error) {
	resource := meta.GroupResource{Resource: "serviceaccounts"}
	st, err := f.For(resource)
	if err != nil {
		return nil, fmt.Errorf("serviceaccounts: %w", err)
	}
	return registry.NewStore(registry.Options[*ServiceAccount]{
		Resource: resource,
		Kind:     "ServiceAccount",
		// kube-apiserver's strategy validates the metadata first.
		MetadataErrorsFirst: true,
		NoGeneration:        true,
		ShortNames:          []string{"sa"},
		NamespaceScoped:     true,
		StorageVersion:      "v1",
		// kube-apiserver takes a PUT without a resourceVersion as
		// unconditional for this kind.
		AllowUnconditionalUpdate: true,
		Strategy:                 registry.DefaultStrategy[*ServiceAccount]{},
		Storage:                  st,
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
