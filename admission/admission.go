package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/metrics"
	"github.com/apikit-dev/apikit/schema"
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
	// Object is the new object in the storage version (nil for Delete),
	// defaulted; mutating plugins may change it.
	Object meta.Object
	// OldObject is the current object on Update and Delete, in the storage
	// version.
	OldObject meta.Object
	// VersionedObject and VersionedOldObject are Object and OldObject in
	// the requested version (Kind.Version), what kube-apiserver sends a
	// webhook of that version; the same objects as Object and OldObject
	// when the requested version is the storage version. The chain sets
	// them from ToVersion before each plugin, so they show the mutations
	// of the plugins before it. They are for reading: mutate Object.
	VersionedObject, VersionedOldObject meta.Object
	// ToVersion converts a storage-version object to the requested
	// version; nil when the two are one version.
	ToVersion func(meta.Object) (meta.Object, error)
	// ToStorage converts an object of the requested version back to the
	// storage version (what a webhook's patch of VersionedObject gives);
	// nil when the two are one version.
	ToStorage func(meta.Object) (meta.Object, error)
	// Equivalents are the same resource as served in its other versions,
	// which a webhook with matchPolicy Equivalent matches too and sees its
	// object converted to.
	Equivalents []Equivalent
	DryRun      bool
	User        *authn.User
	// Schemas and Schema are the shape of the requested version (Schema a
	// reference into Schemas), by which MutatingAdmissionPolicy merges its
	// apply configurations; nil when the resource has none.
	Schemas *schema.Set
	Schema  *schema.Schema
	// Options are the operation's options as the client sent them, in
	// meta.k8s.io/v1 with apiVersion and kind (*meta.DeleteOptions on
	// Delete), what webhooks get as request.options; nil gives them the
	// operation's options kind with only dryRun.
	Options any
}

// Equivalent is a resource's other served version.
type Equivalent struct {
	Kind     meta.GroupVersionKind
	Resource meta.GroupVersionResource
	// ToVersion and ToStorage convert from and to the storage version; nil
	// when this version is the storage version.
	ToVersion, ToStorage func(meta.Object) (meta.Object, error)
}

// versioned sets VersionedObject and VersionedOldObject from Object and
// OldObject.
func (a *Attributes) versioned() error {
	if a.ToVersion == nil {
		a.VersionedObject, a.VersionedOldObject = a.Object, a.OldObject
		return nil
	}
	var err error
	if a.VersionedObject, err = toVersion(a.ToVersion, a.Object); err != nil {
		return err
	}
	a.VersionedOldObject, err = toVersion(a.ToVersion, a.OldObject)
	return err
}

func toVersion(f func(meta.Object) (meta.Object, error), obj meta.Object) (meta.Object, error) {
	if obj == nil {
		return nil, nil
	}
	v, err := f(obj)
	if err != nil {
		return nil, meta.NewInternalError(fmt.Errorf("admission: converting %s to the requested version: %w", obj.GetObjectMeta().Name, err))
	}
	return v, nil
}

// NamespaceLabels looks up a namespace's labels, for the plugins that
// match writes by them (the namespaceSelectors of webhooks and policies).
// It returns an error that meta.IsNotFound recognises for a namespace that
// does not exist. A server that serves namespaces provides one
// (server.Config.AdmissionNamespaces).
type NamespaceLabels interface {
	NamespaceLabels(ctx context.Context, name string) (map[string]string, error)
}

// NamespaceLabelsFunc is a function that is a NamespaceLabels.
type NamespaceLabelsFunc func(ctx context.Context, name string) (map[string]string, error)

// NamespaceLabels calls f.
func (f NamespaceLabelsFunc) NamespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	return f(ctx, name)
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

// NameOf returns p's name, "" for a plugin without one.
func NameOf(p Plugin) string {
	if n, ok := p.(Named); ok {
		return n.Name()
	}
	return ""
}

// Chain runs plugins in order: all mutators first, then all validators.
type Chain []Plugin

// Without returns c without the plugins named in disabled.
func (c Chain) Without(disabled ...string) Chain {
	if len(disabled) == 0 {
		return c
	}
	var out Chain
	for _, p := range c {
		if n := NameOf(p); n == "" || !slices.Contains(disabled, n) {
			out = append(out, p)
		}
	}
	return out
}

// Admit runs the mutating plugins of c.
func (c Chain) Admit(ctx context.Context, a *Attributes) (err error) {
	defer observeStep(ctx, metrics.AdmissionAdmit, a, time.Now(), &err)
	for _, p := range c {
		if m, ok := p.(Mutator); ok && p.Handles(a.Operation) {
			if err := a.versioned(); err != nil {
				return err
			}
			if err := observed(ctx, p, metrics.AdmissionAdmit, a, func() error { return m.Admit(ctx, a) }); err != nil {
				return asStatus(a, err)
			}
		}
	}
	return nil
}

// Validate runs the validating plugins of c.
func (c Chain) Validate(ctx context.Context, a *Attributes) (err error) {
	defer observeStep(ctx, metrics.AdmissionValidate, a, time.Now(), &err)
	converted := false
	for _, p := range c {
		if v, ok := p.(Validator); ok && p.Handles(a.Operation) {
			if !converted {
				// Validators change nothing: one conversion serves them all.
				if err := a.versioned(); err != nil {
					return err
				}
				converted = true
			}
			if err := observed(ctx, p, metrics.AdmissionValidate, a, func() error { return v.Validate(ctx, a) }); err != nil {
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
