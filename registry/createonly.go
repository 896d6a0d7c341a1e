package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
)

// CreateOnlyOptions describe a resource whose one verb is create: a review
// or request that the server computes, answers and never stores, such as
// TokenReview or SubjectAccessReview.
type CreateOnlyOptions[T meta.Object] struct {
	GroupVersion    meta.GroupVersion
	Resource        string
	Kind            string
	SingularName    string
	NamespaceScoped bool
	// Create computes the response from the posted object; it may change
	// and return it. The request's user is in ctx (authn.UserFrom).
	Create func(ctx context.Context, obj T) (T, error)
	// ProtobufToJSON, when set, lets clients post the object in
	// Kubernetes' protobuf encoding, as client-go's typed clients (and so
	// kubectl) do for built-in kinds: it returns the body's JSON. The
	// resource then implements ProtobufDecoder.
	ProtobufToJSON func(body []byte) ([]byte, error)
}

// ProtobufDecoder is implemented by resources that accept writes in
// Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf)
// besides JSON and YAML.
type ProtobufDecoder interface {
	// ProtobufToJSON decodes a protobuf body (with its "k8s\x00" envelope)
	// and returns the object as JSON.
	ProtobufToJSON(body []byte) ([]byte, error)
}

// NewCreateOnly returns a Resource that serves only POST.
func NewCreateOnly[T meta.Object](o CreateOnlyOptions[T]) (Resource, error) {
	ti, err := newTypeInfo[T]()
	if err != nil {
		return nil, err
	}
	if o.Resource == "" || o.Kind == "" || o.GroupVersion.Version == "" || o.Create == nil {
		return nil, errors.New("registry: a create-only resource needs a group-version, resource, kind and Create")
	}
	if o.SingularName == "" {
		o.SingularName = lower(o.Kind)
	}
	c := &createOnly[T]{o: o, ti: ti}
	if o.ProtobufToJSON != nil {
		return createOnlyProtobuf[T]{c}, nil
	}
	return c, nil
}

// createOnlyProtobuf is a createOnly that also reads protobuf.
type createOnlyProtobuf[T meta.Object] struct{ *createOnly[T] }

func (c createOnlyProtobuf[T]) ProtobufToJSON(body []byte) ([]byte, error) {
	b, err := c.o.ProtobufToJSON(body)
	if err != nil {
		return nil, meta.NewBadRequest(err.Error())
	}
	return b, nil
}

type createOnly[T meta.Object] struct {
	o  CreateOnlyOptions[T]
	ti *typeInfo
}

func (c *createOnly[T]) Info() ResourceInfo {
	return ResourceInfo{
		GroupVersion:    c.o.GroupVersion,
		Resource:        c.o.Resource,
		SingularName:    c.o.SingularName,
		Kind:            c.o.Kind,
		NamespaceScoped: c.o.NamespaceScoped,
		Verbs:           []string{"create"},
	}
}

func (c *createOnly[T]) New() meta.Object { return c.ti.newObject().(meta.Object) }

func (c *createOnly[T]) notSupported(verb string) error {
	return meta.NewMethodNotSupported(meta.GroupResource{Group: c.o.GroupVersion.Group, Resource: c.o.Resource}, verb)
}

func (c *createOnly[T]) Create(ctx context.Context, ns string, obj meta.Object, opts WriteOptions) (Item, error) {
	t, ok := obj.(T)
	if !ok {
		return Item{}, meta.NewInternalError(fmt.Errorf("object of type %T is not a %s", obj, c.o.Kind))
	}
	if c.o.NamespaceScoped {
		m := t.GetObjectMeta()
		if m.Namespace == "" {
			m.Namespace = ns
		} else if m.Namespace != ns {
			return Item{}, meta.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	if opts.Admit != nil {
		if err := opts.Admit(ctx, t, nil); err != nil {
			return Item{}, err
		}
	}
	if opts.Validate != nil {
		if err := opts.Validate(ctx, t, nil); err != nil {
			return Item{}, err
		}
	}
	out, err := c.o.Create(ctx, t)
	if err != nil {
		return Item{}, err
	}
	tm := out.GetTypeMeta()
	tm.APIVersion, tm.Kind = c.o.GroupVersion.String(), c.o.Kind
	return NewItem(out), nil
}

func (c *createOnly[T]) Get(context.Context, string, string, meta.GetOptions) (Item, error) {
	return Item{}, c.notSupported("get")
}

func (c *createOnly[T]) List(context.Context, string, meta.ListOptions) (*List, error) {
	return nil, c.notSupported("list")
}

func (c *createOnly[T]) Watch(context.Context, string, meta.ListOptions) (<-chan WatchEvent, error) {
	return nil, c.notSupported("watch")
}

func (c *createOnly[T]) Update(context.Context, string, string, ObjectUpdate, UpdateOptions) (Item, bool, error) {
	return Item{}, false, c.notSupported("update")
}

func (c *createOnly[T]) Delete(context.Context, string, string, DeleteOptions) (Item, bool, error) {
	return Item{}, false, c.notSupported("delete")
}

func (c *createOnly[T]) DeleteCollection(context.Context, string, meta.ListOptions, DeleteOptions) (*List, error) {
	return nil, c.notSupported("deletecollection")
}

func (c *createOnly[T]) Table(context.Context, []Item, meta.TableOptions) (*meta.Table, error) {
	return nil, c.notSupported("get")
}
