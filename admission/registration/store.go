package registration

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// strategy defaults on decode and validates creates and updates apart, as
// kube-apiserver's webhook configuration strategies do.
type strategy[T meta.Object] struct {
	registry.DefaultStrategy[T]
	defaults       func(T)
	validate       func(T) meta.FieldErrors
	validateUpdate func(obj, old T) meta.FieldErrors
}

// Default implements registry.Defaulter: the v1 defaults are defaulting
// functions, applied before admission.
func (s strategy[T]) Default(obj T) { s.defaults(obj) }

func (s strategy[T]) Validate(_ context.Context, obj T) meta.FieldErrors { return s.validate(obj) }

func (s strategy[T]) ValidateUpdate(_ context.Context, obj, old T) meta.FieldErrors {
	return s.validateUpdate(obj, old)
}

// Stores are one server's admissionregistration.k8s.io/v1 webhook
// configurations.
type Stores struct {
	Mutating   *registry.Store[*MutatingWebhookConfiguration]
	Validating *registry.Store[*ValidatingWebhookConfiguration]
}

// NewStores builds the stores on the storage f gives each resource.
func NewStores(f storage.Factory) (*Stores, error) {
	ms, err := f.For(MutatingWebhookConfigurations)
	if err != nil {
		return nil, fmt.Errorf("mutatingwebhookconfigurations storage: %w", err)
	}
	vs, err := f.For(ValidatingWebhookConfigurations)
	if err != nil {
		return nil, fmt.Errorf("validatingwebhookconfigurations storage: %w", err)
	}
	m, err := registry.NewStore(registry.Options[*MutatingWebhookConfiguration]{
		Resource:       MutatingWebhookConfigurations,
		Kind:           "MutatingWebhookConfiguration",
		Categories:     []string{"api-extensions"},
		StorageVersion: Version,
		Strategy: strategy[*MutatingWebhookConfiguration]{defaults: SetMutatingDefaults,
			validate: ValidateMutating, validateUpdate: ValidateMutatingUpdate},
		Storage: ms,
		Columns: []registry.Column[*MutatingWebhookConfiguration]{webhooksColumn(func(c *MutatingWebhookConfiguration) int {
			return len(c.Webhooks)
		})},
	})
	if err != nil {
		return nil, err
	}
	v, err := registry.NewStore(registry.Options[*ValidatingWebhookConfiguration]{
		Resource:       ValidatingWebhookConfigurations,
		Kind:           "ValidatingWebhookConfiguration",
		Categories:     []string{"api-extensions"},
		StorageVersion: Version,
		Strategy: strategy[*ValidatingWebhookConfiguration]{defaults: SetValidatingDefaults,
			validate: ValidateValidating, validateUpdate: ValidateValidatingUpdate},
		Storage: vs,
		Columns: []registry.Column[*ValidatingWebhookConfiguration]{webhooksColumn(func(c *ValidatingWebhookConfiguration) int {
			return len(c.Webhooks)
		})},
	})
	if err != nil {
		return nil, err
	}
	return &Stores{Mutating: m, Validating: v}, nil
}

// webhooksColumn is kubectl get's WEBHOOKS column, as kube-apiserver prints it.
func webhooksColumn[T meta.Object](n func(T) int) registry.Column[T] {
	return registry.Column[T]{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration.",
		Value: func(obj T) any { return int64(n(obj)) }}
}

// Resources returns what a server installs as admissionregistration.k8s.io/v1.
func (s *Stores) Resources() []registry.Resource {
	return []registry.Resource{registry.ServeProtobuf(s.Mutating, mutatingWebhooksProtobuf.ToJSON),
		registry.ServeProtobuf(s.Validating, validatingWebhooksProtobuf.ToJSON)}
}
