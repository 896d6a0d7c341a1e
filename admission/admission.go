package admission

import (
	"context"
	"errors"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
)

// Operation is the kind of write being admitted.
type Operation string

// Operations.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one write.
type Attributes struct {
	Operation   Operation
	Kind        meta.GroupVersionKind
	Resource    meta.GroupVersionResource
	Subresource string
	Namespace   string
	Name        string
	// Object is the new object (nil for Delete); mutating plugins may change it.
	Object meta.Object
	// OldObject is the current object on Update and Delete.
	OldObject meta.Object
	DryRun    bool
	User      *authn.User
}

// Mutator may change the object before validation.
type Mutator interface {
	Admit(ctx context.Context, a *Attributes) error
}

// Validator may refuse the write; it must not change anything.
type Validator interface {
	Validate(ctx context.Context, a *Attributes) error
}

// Plugin is implemented by admission plugins; a plugin may be a Mutator, a
// Validator or both. Handles filters which writes it sees.
type Plugin interface {
	Handles(op Operation) bool
}

// Chain runs plugins in order: all mutators first, then all validators.
type Chain []Plugin

// Admit runs the mutating plugins of c.
func (c Chain) Admit(ctx context.Context, a *Attributes) error {
	for _, p := range c {
		if m, ok := p.(Mutator); ok && p.Handles(a.Operation) {
			if err := m.Admit(ctx, a); err != nil {
				return asStatus(a, err)
			}
		}
	}
	return nil
}

// Validate runs the validating plugins of c.
func (c Chain) Validate(ctx context.Context, a *Attributes) error {
	for _, p := range c {
		if v, ok := p.(Validator); ok && p.Handles(a.Operation) {
			if err := v.Validate(ctx, a); err != nil {
				return asStatus(a, err)
			}
		}
	}
	return nil
}

// asStatus turns a plain plugin error into the Forbidden Status that
// kube-apiserver's admission answers with.
func asStatus(a *Attributes, err error) error {
	var se *meta.StatusError
	if errors.As(err, &se) {
		return err
	}
	return meta.NewForbidden(a.Resource.GroupResource(), a.Name, err)
}

// Handler is a convenience base for plugins: it handles the listed operations.
type Handler struct {
	Operations []Operation
}

// Handles reports whether op is among h.Operations.
func (h Handler) Handles(op Operation) bool {
	for _, o := range h.Operations {
		if o == op {
			return true
		}
	}
	return false
}
