package registry

import (
	"context"

	"github.com/apikit-dev/apikit/meta"
)

// Strategy is what makes a resource particular. The Store calls it on every
// write, after it has filled in system metadata on create and before it
// persists anything.
type Strategy[T meta.Object] interface {
	// PrepareForCreate clears what a client may not set on create and fills
	// defaults. Status is already reset to its zero value when the resource
	// has a status subresource.
	PrepareForCreate(ctx context.Context, obj T)
	// PrepareForUpdate does the same for an update; old is the current object.
	PrepareForUpdate(ctx context.Context, obj, old T)
	// Validate checks a new object. Errors become a 422 Invalid Status with
	// one cause per field error.
	Validate(ctx context.Context, obj T) meta.FieldErrors
	// ValidateUpdate checks an updated object against the current one.
	ValidateUpdate(ctx context.Context, obj, old T) meta.FieldErrors
}

// DefaultStrategy is a Strategy that accepts everything. Embed it and
// override the methods a resource needs.
type DefaultStrategy[T meta.Object] struct{}

// PrepareForCreate does nothing.
func (DefaultStrategy[T]) PrepareForCreate(context.Context, T) {}

// PrepareForUpdate does nothing.
func (DefaultStrategy[T]) PrepareForUpdate(context.Context, T, T) {}

// Validate accepts everything.
func (DefaultStrategy[T]) Validate(context.Context, T) meta.FieldErrors { return nil }

// ValidateUpdate accepts everything.
func (DefaultStrategy[T]) ValidateUpdate(context.Context, T, T) meta.FieldErrors { return nil }

// Defaulter is optionally implemented by a Strategy whose resource has
// defaults: fields a client may leave out and the server fills in, as
// kube-apiserver's defaulting functions do. The Store calls Default on the
// object a write brings (the body of a create, the result of an update or
// patch) before mutating admission, so that admission plugins (and the
// webhooks of a later issue) see defaulted objects as kube-apiserver's do;
// PrepareForCreate and PrepareForUpdate run after admission.
type Defaulter[T meta.Object] interface {
	Default(obj T)
}

// StatusStrategy is optionally implemented by a Strategy whose resource has a
// status subresource, to validate status updates on their own.
type StatusStrategy[T meta.Object] interface {
	ValidateStatusUpdate(ctx context.Context, obj, old T) meta.FieldErrors
}

// FinalizingStrategy is optionally implemented by a Strategy whose objects
// carry finalizers of their own besides metadata.finalizers, as a
// namespace's spec.finalizers: a DELETE of an object that has some only
// marks it (deletionTimestamp set, PrepareForDelete applied), and the object
// is deleted once both kinds are gone, by the update that removes the last.
type FinalizingStrategy[T meta.Object] interface {
	// Finalizing reports whether obj still has finalizers of its own.
	Finalizing(obj T) bool
	// PrepareForDelete changes what the first DELETE marks, as a
	// namespace's phase becomes Terminating.
	PrepareForDelete(obj T)
}
