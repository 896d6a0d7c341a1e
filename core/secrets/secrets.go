// Package secrets serves the core group's secrets
// (/api/v1/namespaces/{namespace}/secrets): data (base64 on the wire),
// stringData merged into data on write as kube-apiserver does, the types
// and the keys each requires, 1 MiB of data, and immutable ones.
package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/apikit-dev/apikit/core/configmaps"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// Secret types and the keys they require.
const (
	TypeOpaque              = "Opaque"
	TypeServiceAccountToken = "kubernetes.io/service-account-token"
	TypeDockercfg           = "kubernetes.io/dockercfg"
	TypeDockerConfigJSON    = "kubernetes.io/dockerconfigjson"
	TypeBasicAuth           = "kubernetes.io/basic-auth"
	TypeSSHAuth             = "kubernetes.io/ssh-auth"
	TypeTLS                 = "kubernetes.io/tls"

	ServiceAccountNameKey = "kubernetes.io/service-account.name"
	DockerConfigKey       = ".dockercfg"
	DockerConfigJSONKey   = ".dockerconfigjson"
	BasicAuthUsernameKey  = "username"
	BasicAuthPasswordKey  = "password"
	SSHAuthPrivateKey     = "ssh-privatekey"
	TLSCertKey            = "tls.crt"
	TLSPrivateKeyKey      = "tls.key"
)

// Secret is core/v1 Secret.
type Secret struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`

	Immutable  *bool             `json:"immutable,omitempty" protobuf:"5"`
	Data       map[string][]byte `json:"data,omitempty" protobuf:"2"`
	StringData map[string]string `json:"stringData,omitempty" protobuf:"4"`
	Type       string            `json:"type,omitempty" protobuf:"3"`
}

// SwaggerDoc describes Secret in OpenAPI, in kube-apiserver's words.
func (Secret) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "Secret holds secret data of a certain type. The total bytes of the values in the Data field must be less than MaxSecretSize bytes.",
		"data":       "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
		"immutable":  "Immutable, if set to true, ensures that data stored in the Secret cannot be updated (only object metadata can be modified). If not set to true, the field can be modified at any time. Defaulted to nil.",
		"stringData": "stringData allows specifying non-binary secret data in string form. It is provided as a write-only input field for convenience. All keys and values are merged into the data field on write, overwriting any existing values. The stringData field is never output when reading from the API.",
		"type":       "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
	}
}

// ListSwaggerDoc describes SecretList in OpenAPI, in kube-apiserver's words.
func (Secret) ListSwaggerDoc() map[string]string {
	return map[string]string{
		"":         "SecretList is a list of Secret.",
		"items":    "Items is a list of secret objects. More info: https://kubernetes.io/docs/concepts/configuration/secret",
		"metadata": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
	}
}

// New returns the secrets store on the storage f gives it.
func New(f storage.Factory) (*registry.Store[*Secret], error) {
	resource := meta.GroupResource{Resource: "secrets"}
	st, err := f.For(resource)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return registry.NewStore(registry.Options[*Secret]{
		Resource: resource,
		Kind:     "Secret",
		// kube-apiserver's strategy validates the metadata first.
		MetadataErrorsFirst: true,
		NoGeneration:        true,
		DeleteStatus:        true,
		NamespaceScoped:     true,
		StorageVersion:      "v1",
		// kube-apiserver takes a PUT without a resourceVersion as
		// unconditional for this kind.
		AllowUnconditionalUpdate: true,
		Strategy:                 strategy{},
		Storage:                  st,
		Columns: []registry.Column[*Secret]{
			{Name: "Type", Type: "string", Description: "Used to facilitate programmatic handling of secret data.", Value: func(s *Secret) any { return s.Type }},
			{Name: "Data", Type: "integer", Description: "Number of data keys.", Value: func(s *Secret) any { return int64(len(s.Data)) }},
		},
		Fields: func(s *Secret) meta.Set { return meta.Set{"type": s.Type} },
	})
}

type strategy struct {
	registry.DefaultStrategy[*Secret]
}

// Default implements registry.Defaulter: the type defaults to Opaque and
// stringData is merged into data (overwriting), then dropped, as
// kube-apiserver's conversion of a v1 Secret does.
func (strategy) Default(s *Secret) {
	if s.Type == "" {
		s.Type = TypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func (strategy) Validate(_ context.Context, s *Secret) meta.FieldErrors { return Validate(s) }

func (strategy) ValidateUpdate(_ context.Context, s, old *Secret) meta.FieldErrors {
	var errs meta.FieldErrors
	if s.Type != old.Type {
		errs = append(errs, meta.Invalid(meta.NewPath("type"), s.Type, "field is immutable"))
	}
	if configmaps.IsImmutable(old.Immutable) {
		if !configmaps.IsImmutable(s.Immutable) {
			errs = append(errs, meta.Forbidden(meta.NewPath("immutable"), configmaps.ImmutableMessage))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			errs = append(errs, meta.Forbidden(meta.NewPath("data"), configmaps.ImmutableMessage))
		}
	}
	return append(errs, Validate(s)...)
}

// redacted stands for a secret's value in an error, as kube-apiserver's.
const redacted = "<secret contents redacted>"

// Validate checks a Secret as kube-apiserver does: keys, 1 MiB of data, and
// the keys its type requires.
func Validate(s *Secret) meta.FieldErrors {
	var errs meta.FieldErrors
	data := meta.NewPath("data")
	keys := make([]string, 0, len(s.Data))
	total := 0
	for k, v := range s.Data {
		keys = append(keys, k)
		total += len(v)
	}
	slices.Sort(keys)
	for _, k := range keys {
		errs = append(errs, configmaps.ValidateKey(data.Key(k), k)...)
	}
	if total > configmaps.MaxSize {
		errs = append(errs, meta.TooLong(data, "", configmaps.MaxSize))
	}
	switch s.Type {
	case TypeServiceAccountToken:
		if s.Annotations[ServiceAccountNameKey] == "" {
			errs = append(errs, meta.Required(meta.NewPath("metadata", "annotations").Key(ServiceAccountNameKey), ""))
		}
	case TypeDockercfg, TypeDockerConfigJSON:
		key := DockerConfigKey
		if s.Type == TypeDockerConfigJSON {
			key = DockerConfigJSONKey
		}
		v, ok := s.Data[key]
		if !ok {
			errs = append(errs, meta.Required(data.Key(key), ""))
			break
		}
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			errs = append(errs, meta.Invalid(data.Key(key), redacted, err.Error()))
		}
	case TypeBasicAuth:
		_, user := s.Data[BasicAuthUsernameKey]
		_, password := s.Data[BasicAuthPasswordKey]
		if !user && !password {
			errs = append(errs, meta.Required(data.Key(BasicAuthUsernameKey), ""), meta.Required(data.Key(BasicAuthPasswordKey), ""))
		}
	case TypeSSHAuth:
		if len(s.Data[SSHAuthPrivateKey]) == 0 {
			errs = append(errs, meta.Required(data.Key(SSHAuthPrivateKey), ""))
		}
	case TypeTLS:
		if _, ok := s.Data[TLSCertKey]; !ok {
			errs = append(errs, meta.Required(data.Key(TLSCertKey), ""))
		}
		if _, ok := s.Data[TLSPrivateKeyKey]; !ok {
			errs = append(errs, meta.Required(data.Key(TLSPrivateKeyKey), ""))
		}
	}
	return errs
}
