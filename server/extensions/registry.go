package extensions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// NewStore returns the store of CustomResourceDefinitions on the storage f
// hands out for them, under kube-apiserver's key
// (/apiextensions.k8s.io/customresourcedefinitions/<name>), with its
// defaults, validation and table (NAME, CREATED AT).
func NewStore(f storage.Factory) (*registry.Store[*CustomResourceDefinition], error) {
	s, err := f.For(Resource)
	if err != nil {
		return nil, fmt.Errorf("extensions: storage for %s: %w", Resource, err)
	}
	return registry.NewStore(registry.Options[*CustomResourceDefinition]{
		Resource:          Resource,
		Kind:              "CustomResourceDefinition",
		ShortNames:        []string{"crd", "crds"},
		Categories:        []string{"api-extensions"},
		StorageVersion:    Version,
		Strategy:          crdStrategy{},
		Storage:           s,
		StatusSubresource: true,
		NoAgeColumn:       true,
		Columns: []registry.Column[*CustomResourceDefinition]{{
			Name: "Created At", Type: "date",
			Description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
			Value: func(c *CustomResourceDefinition) any {
				return c.CreationTimestamp.UTC().Format(time.RFC3339)
			},
		}},
	})
}

// crdStrategy defaults and validates CRDs as kube-apiserver does.
type crdStrategy struct{}

var (
	_ registry.Defaulter[*CustomResourceDefinition]      = crdStrategy{}
	_ registry.StatusStrategy[*CustomResourceDefinition] = crdStrategy{}
)

// Default fills what apiextensions.k8s.io/v1 defaults: the singular name
// and list kind from the kind, the None conversion, a webhook service's
// port 443.
func (crdStrategy) Default(c *CustomResourceDefinition) {
	n := &c.Spec.Names
	if n.Singular == "" {
		n.Singular = strings.ToLower(n.Kind)
	}
	if n.ListKind == "" && n.Kind != "" {
		n.ListKind = n.Kind + "List"
	}
	if c.Spec.Conversion == nil {
		c.Spec.Conversion = &CustomResourceConversion{Strategy: NoneConverter}
	}
	if w := c.Spec.Conversion.Webhook; w != nil && w.ClientConfig != nil && w.ClientConfig.Service != nil && w.ClientConfig.Service.Port == nil {
		port := int32(443)
		w.ClientConfig.Service.Port = &port
	}
}

// PrepareForCreate records the storage version as stored: objects will be
// written in it.
func (crdStrategy) PrepareForCreate(_ context.Context, c *CustomResourceDefinition) {
	c.Status = CustomResourceDefinitionStatus{}
	if v := c.Spec.StorageVersion(); v != "" {
		c.Status.StoredVersions = []string{v}
	}
}

// PrepareForUpdate adds a new storage version to status.storedVersions.
func (crdStrategy) PrepareForUpdate(_ context.Context, c, old *CustomResourceDefinition) {
	c.Status.StoredVersions = slices.Clone(old.Status.StoredVersions)
	if v := c.Spec.StorageVersion(); v != "" && !slices.Contains(c.Status.StoredVersions, v) {
		c.Status.StoredVersions = append(c.Status.StoredVersions, v)
	}
}

func (crdStrategy) Validate(_ context.Context, c *CustomResourceDefinition) meta.FieldErrors {
	return ValidateCustomResourceDefinition(c)
}

func (crdStrategy) ValidateUpdate(_ context.Context, c, old *CustomResourceDefinition) meta.FieldErrors {
	return ValidateCustomResourceDefinitionUpdate(c, old)
}

func (crdStrategy) ValidateStatusUpdate(_ context.Context, c, _ *CustomResourceDefinition) meta.FieldErrors {
	return ValidateCustomResourceDefinitionStatus(c)
}

// crdResource serves CRDs: the store's resource, with kube-apiserver's
// delete. The first DELETE of a CRD adds the cleanup finalizer, so that
// its custom resources are deleted (by the finalizer controller) before
// it goes.
type crdResource struct {
	registry.Resource
	store *registry.Store[*CustomResourceDefinition]
}

// Delete adds the cleanup finalizer before deleting, as kube-apiserver's
// CRD storage does: the object is then only marked, and goes when the
// finalizer controller has deleted its custom resources.
func (r crdResource) Delete(ctx context.Context, ns, name string, opts registry.DeleteOptions) (registry.Item, bool, error) {
	_, _, err := r.store.Update(ctx, "", name, func(_ context.Context, cur *CustomResourceDefinition) (*CustomResourceDefinition, error) {
		if cur == nil {
			return nil, meta.NewNotFound(Resource, name)
		}
		if opts.Preconditions != nil {
			if uid := opts.Preconditions.UID; uid != nil && *uid != cur.UID {
				return nil, meta.NewConflict(Resource, name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *uid, cur.UID))
			}
		}
		if cur.DeletionTimestamp != nil || slices.Contains(cur.Finalizers, CleanupFinalizer) {
			return cur, nil
		}
		cur.Finalizers = append(cur.Finalizers, CleanupFinalizer)
		return cur, nil
	}, registry.UpdateOptions{WriteOptions: registry.WriteOptions{DryRun: opts.DryRun}})
	if err != nil {
		return registry.Item{}, false, err
	}
	return r.Resource.Delete(ctx, ns, name, opts)
}

// DeleteCollection deletes each CRD as Delete does.
func (r crdResource) DeleteCollection(ctx context.Context, ns string, listOpts meta.ListOptions, opts registry.DeleteOptions) (*registry.List, error) {
	listOpts.Limit, listOpts.Continue = 0, ""
	res, err := r.store.List(ctx, ns, listOpts)
	if err != nil {
		return nil, err
	}
	out := &registry.List{ResourceVersion: res.ResourceVersion}
	for _, e := range res.Items {
		o := opts
		uid := e.Object.UID
		o.Preconditions = &meta.Preconditions{UID: &uid}
		it, _, err := r.Delete(ctx, "", e.Object.Name, o)
		if meta.IsNotFound(err) || meta.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}

// ProtobufToJSON implements registry.ProtobufDecoder, which the embedded
// Resource does but an embedded interface does not pass on.
func (r crdResource) ProtobufToJSON(body []byte) ([]byte, error) {
	return r.Resource.(registry.ProtobufDecoder).ProtobufToJSON(body)
}
