// Package configmaps serves the core group's configmaps
// (/api/v1/namespaces/{namespace}/configmaps): data and binaryData under
// keys kube-apiserver accepts, 1 MiB in all, and immutable ones.
package configmaps

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// MaxSize bounds the data of a ConfigMap or a Secret, as kube-apiserver's
// MaxSecretSize: 1 MiB.
const MaxSize = 1 << 20

// ConfigMap is core/v1 ConfigMap.
type ConfigMap struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty" protobuf:"1"`

	Immutable  *bool             `json:"immutable,omitempty" protobuf:"4"`
	Data       map[string]string `json:"data,omitempty" protobuf:"2"`
	BinaryData map[string][]byte `json:"binaryData,omitempty" protobuf:"3"`
}

// SwaggerDoc describes ConfigMap in OpenAPI, in kube-apiserver's words.
func (ConfigMap) SwaggerDoc() map[string]string {
	return map[string]string{
		"":           "ConfigMap holds configuration data for pods to consume.",
		"binaryData": "BinaryData contains the binary data. Each key must consist of alphanumeric characters, '-', '_' or '.'. BinaryData can contain byte sequences that are not in the UTF-8 range. The keys stored in BinaryData must not overlap with the ones in the Data field, this is enforced during validation process. Using this field will require 1.10+ apiserver and kubelet. Note: BinaryData keys are not currently propagated to container env vars via ConfigMapKeyRef or ConfigMapRef env sources; only Data keys are used.",
		"data":       "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
		"immutable":  "Immutable, if set to true, ensures that data stored in the ConfigMap cannot be updated (only object metadata can be modified). If not set to true, the field can be modified at any time. Defaulted to nil.",
	}
}

// ListSwaggerDoc describes ConfigMapList in OpenAPI, in kube-apiserver's words.
func (ConfigMap) ListSwaggerDoc() map[string]string {
	return map[string]string{
		"":         "ConfigMapList is a resource containing a list of ConfigMap objects.",
		"items":    "Items is the list of ConfigMaps.",
		"metadata": "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
	}
}

// New returns the configmaps store on the storage f gives it.
func New(f storage.Factory) (*registry.Store[*ConfigMap], error) {
	resource := meta.GroupResource{Resource: "configmaps"}
	st, err := f.For(resource)
	if err != nil {
		return nil, fmt.Errorf("configmaps: %w", err)
	}
	return registry.NewStore(registry.Options[*ConfigMap]{
		Resource: resource,
		Kind:     "ConfigMap",
		// kube-apiserver's strategy validates the metadata first.
		MetadataErrorsFirst: true,
		NoGeneration:        true,
		DeleteStatus:        true,
		ShortNames:          []string{"cm"},
		NamespaceScoped:     true,
		StorageVersion:      "v1",
		// kube-apiserver takes a PUT without a resourceVersion as
		// unconditional for this kind.
		AllowUnconditionalUpdate: true,
		Strategy:                 strategy{},
		Storage:                  st,
		Columns: []registry.Column[*ConfigMap]{
			{Name: "Data", Type: "integer", Description: "Number of data keys.", Value: func(c *ConfigMap) any { return int64(len(c.Data) + len(c.BinaryData)) }},
		},
	})
}

type strategy struct {
	registry.DefaultStrategy[*ConfigMap]
}

func (strategy) Validate(_ context.Context, c *ConfigMap) meta.FieldErrors { return Validate(c) }

func (strategy) ValidateUpdate(_ context.Context, c, old *ConfigMap) meta.FieldErrors {
	var errs meta.FieldErrors
	if IsImmutable(old.Immutable) {
		if !IsImmutable(c.Immutable) {
			errs = append(errs, meta.Forbidden(meta.NewPath("immutable"), ImmutableMessage))
		}
		if !reflect.DeepEqual(c.Data, old.Data) {
			errs = append(errs, meta.Forbidden(meta.NewPath("data"), ImmutableMessage))
		}
		if !reflect.DeepEqual(c.BinaryData, old.BinaryData) {
			errs = append(errs, meta.Forbidden(meta.NewPath("binaryData"), ImmutableMessage))
		}
	}
	return append(errs, Validate(c)...)
}

// ImmutableMessage is kube-apiserver's refusal of a change to the data of
// an immutable ConfigMap or Secret.
const ImmutableMessage = "field is immutable when `immutable` is set"

// IsImmutable reports whether an immutable field is set and true.
func IsImmutable(b *bool) bool { return b != nil && *b }

// Validate checks a ConfigMap as kube-apiserver does: keys, no key in both
// data and binaryData, 1 MiB in all.
func Validate(c *ConfigMap) meta.FieldErrors {
	var errs meta.FieldErrors
	total := 0
	for _, key := range sortedKeys(c.Data) {
		p := meta.NewPath("data").Key(key)
		errs = append(errs, ValidateKey(p, key)...)
		if _, dup := c.BinaryData[key]; dup {
			errs = append(errs, meta.Invalid(p, key, "duplicate of key present in binaryData"))
		}
		total += len(c.Data[key])
	}
	for _, key := range sortedKeys(c.BinaryData) {
		errs = append(errs, ValidateKey(meta.NewPath("binaryData").Key(key), key)...)
		total += len(c.BinaryData[key])
	}
	if total > MaxSize {
		// kube-apiserver reports the whole object, with an empty path,
		// which its field paths print as "[]".
		errs = append(errs, meta.TooLong(meta.NewPath("").Key(""), "", MaxSize))
	}
	return errs
}

// ValidateKey checks one data key (meta.ValidateConfigMapKey).
func ValidateKey(p *meta.Path, key string) meta.FieldErrors {
	var errs meta.FieldErrors
	for _, msg := range meta.ValidateConfigMapKey(key) {
		errs = append(errs, meta.Invalid(p, key, msg))
	}
	return errs
}

// sortedKeys orders a map's keys, so that errors come in a stable order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
