package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unique"

	"github.com/google/uuid"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
)

// Options configure a Store.
type Options[T meta.Object] struct {
	// Resource is the plural resource and its group, e.g.
	// {Group: "wardle.example.com", Resource: "flunders"}.
	Resource meta.GroupResource
	// Kind is the object kind, e.g. "Flunder".
	Kind string
	// SingularName defaults to the lowercased Kind.
	SingularName string
	// ShortNames and Categories appear in discovery (kubectl get fl, get all).
	ShortNames []string
	Categories []string
	// NamespaceScoped is true for namespaced resources.
	NamespaceScoped bool
	// StorageVersion is the version whose Go type T is; objects are stored
	// with apiVersion <group>/<StorageVersion>.
	StorageVersion string
	// StorageAPIVersion, when set, is the apiVersion stored objects carry
	// instead: a resource served in a group of its own over another
	// group's objects, as events.k8s.io's events are core v1 Events in
	// storage, sets the other's, so that both stores write the same bytes.
	StorageAPIVersion string
	// Strategy supplies defaults and validation. Required.
	Strategy Strategy[T]
	// Storage holds the objects. Required.
	Storage storage.Interface
	// KeyRoot is the storage key prefix of this resource. The default is
	// the root of Storage when it serves one root (storage.Rooted: a watch
	// cache), else storage.KeyRoot(Resource), "/<group>/<resource>", as
	// kube-apiserver lays out etcd. A store refuses a KeyRoot other than
	// its Rooted storage's, whose cache would not hold its keys: get
	// storage for a custom root with storage.ForRoot.
	KeyRoot string
	// StatusSubresource serves <name>/status: the main resource ignores
	// status changes and the subresource ignores everything else.
	StatusSubresource bool
	// AllowCreateOnUpdate lets PUT create a missing object.
	AllowCreateOnUpdate bool
	// AllowUnconditionalUpdate lets PUT omit metadata.resourceVersion.
	AllowUnconditionalUpdate bool
	// NameValidator checks names; the default allows RFC 1123 subdomains.
	NameValidator NameValidator
	// MetadataErrorsFirst makes a create report the metadata's errors
	// (name, labels, annotations...) first and the strategy's after them,
	// in one Invalid error, as kube-apiserver answers for its own kinds
	// and custom resources, whose strategies validate the metadata first.
	// Without it a create reports the strategy's errors alone, and the
	// metadata's only once the strategy passes, as k8s.io/apiserver's
	// rest.BeforeCreate does for a strategy that leaves the metadata to it
	// (sample-apiserver's flunders). Updates report both at once either
	// way, the metadata's first.
	MetadataErrorsFirst bool
	// Columns are extra Table columns after NAME; AGE follows the last
	// one of priority 0, before the wide-only ones, as in kube's printers.
	Columns []Column[T]
	// NoAgeColumn leaves AGE out of Tables: the Columns are all there is
	// after NAME (a CustomResourceDefinition's printer columns, which
	// show age as a column of their own when they do).
	NoAgeColumn bool
	// NoNameColumn leaves NAME out of Tables too, for a resource kubectl
	// shows otherwise (events: LAST SEEN first, the name last, wide only).
	NoNameColumn bool
	// Fields returns selectable fields beyond metadata.name and
	// metadata.namespace, which are always selectable. It must return the
	// same field names for every object, an empty one included: a field
	// selector on any other field is refused.
	Fields func(obj T) meta.Set
	// DeleteStatus answers a delete that removed the object at once with
	// a Status Success naming it instead of the object, as kube-apiserver's
	// generic store does for every kind but the few it configures with
	// ReturnDeletedObject (pods, service accounts, custom resources): a
	// delete that only marks the object (finalizers) still returns it.
	DeleteStatus bool
	// NoGeneration leaves metadata.generation unset: kube-apiserver keeps
	// a generation only for kinds whose strategy tracks one (custom
	// resources, CRDs, admission policies, flow schemas), never for
	// configmaps, secrets, namespaces, service accounts, events, leases or
	// the RBAC kinds, and clients compare objects with it.
	NoGeneration bool
	// InternalKind, when its Kind is set, is the kind Invalid errors and
	// a delete's precondition conflicts name, where kube-apiserver names
	// the kind of the internal object its strategy validates rather than
	// the served resource's: events.k8s.io/v1 events are core Events
	// there ("Event \"x\" is invalid", no group). The default is Kind in
	// Resource's group.
	InternalKind meta.GroupKind
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store keeps the objects of one resource in storage with Kubernetes
// semantics. Its methods work in the storage version T; objects they return
// may be shared with a cache and must not be modified, except those returned
// by Create, Update and Delete.
type Store[T meta.Object] struct {
	opts              Options[T]
	ti                *typeInfo
	storageAPIVersion string
	// decodedMemoKey is the memo key of the store's decoded objects.
	decodedMemoKey unique.Handle[decodedMemoKey]
	// storedPrefix starts every value encodeForStorage writes (storedJSON).
	storedPrefix []byte
	gk           meta.GroupKind
	// errKind is the kind errors name (Options.InternalKind).
	errKind meta.GroupKind
	// fieldLabels are the selectable fields, nil when unknown.
	fieldLabels map[string]bool
	// attrsKey keys the selectable attributes in a stored value's memo:
	// nil (the storage's shared key) for the metadata alone, the
	// resource's own key with Fields, which another resource over the
	// same storage may name otherwise (events.k8s.io/v1's regarding.*
	// for core/v1's involvedObject.*).
	attrsKey any
}

// fieldsMemoKey keys the attributes of a resource with Fields in a memo.
type fieldsMemoKey struct{ resource meta.GroupResource }

// NewStore checks opts and returns a Store.
func NewStore[T meta.Object](opts Options[T]) (*Store[T], error) {
	ti, err := newTypeInfo[T]()
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Resource.Resource == "":
		return nil, errors.New("registry: Options.Resource.Resource is required")
	case opts.Kind == "":
		return nil, errors.New("registry: Options.Kind is required")
	case opts.StorageVersion == "":
		return nil, errors.New("registry: Options.StorageVersion is required")
	case opts.Strategy == nil:
		return nil, errors.New("registry: Options.Strategy is required")
	case opts.Storage == nil:
		return nil, errors.New("registry: Options.Storage is required")
	}
	if opts.StatusSubresource && ti.status < 0 {
		return nil, fmt.Errorf("registry: StatusSubresource needs a field with JSON name \"status\" in %v", ti.elem)
	}
	if opts.SingularName == "" {
		opts.SingularName = lower(opts.Kind)
	}
	if err := resolveKeyRoot(&opts.KeyRoot, opts.Resource, opts.Storage); err != nil {
		return nil, err
	}
	if opts.NameValidator == nil {
		opts.NameValidator = ValidateDNSSubdomainName
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	errKind := opts.InternalKind
	if errKind.Kind == "" {
		errKind = meta.GroupKind{Group: opts.Resource.Group, Kind: opts.Kind}
	}
	apiVersion := meta.GroupVersion{Group: opts.Resource.Group, Version: opts.StorageVersion}.String()
	if opts.StorageAPIVersion != "" {
		apiVersion = opts.StorageAPIVersion
	}
	return &Store[T]{
		opts:              opts,
		ti:                ti,
		storageAPIVersion: apiVersion,
		decodedMemoKey:    unique.Make(decodedMemoKey{apiVersion, ti}),
		storedPrefix:      storedPrefix(opts.Kind, apiVersion),
		gk:                meta.GroupKind{Group: opts.Resource.Group, Kind: opts.Kind},
		errKind:           errKind,
		fieldLabels:       fieldLabels(ti, opts.Fields),
		attrsKey:          attrsKey(opts),
	}, nil
}

// attrsKey returns a Store's attrsKey, boxed once: a unique.Handle, which
// a memo lookup compares as one word, as the registry's other memo keys.
func attrsKey[T meta.Object](opts Options[T]) any {
	if opts.Fields == nil {
		return nil
	}
	return unique.Make(fieldsMemoKey{opts.Resource})
}

// fieldLabels returns the fields a selector may name: the metadata ones and
// those Fields gives for an empty object; nil (anything goes) when Fields
// cannot handle an empty object.
func fieldLabels[T meta.Object](ti *typeInfo, fields func(T) meta.Set) (labels map[string]bool) {
	labels = map[string]bool{"metadata.name": true, "metadata.namespace": true}
	if fields == nil {
		return labels
	}
	defer func() {
		if recover() != nil {
			labels = nil
		}
	}()
	for k := range fields(ti.newObject().(T)) {
		labels[k] = true
	}
	return labels
}

// MustNewStore is NewStore for package-level setup code; it panics on a
// programming error in opts.
func MustNewStore[T meta.Object](opts Options[T]) *Store[T] {
	s, err := NewStore(opts)
	if err != nil {
		panic(err)
	}
	return s
}

// Resource returns the group and plural resource.
func (s *Store[T]) Resource() meta.GroupResource { return s.opts.Resource }

// GroupKind returns the group and kind.
func (s *Store[T]) GroupKind() meta.GroupKind { return s.gk }

// NamespaceScoped reports whether objects live in namespaces.
func (s *Store[T]) NamespaceScoped() bool { return s.opts.NamespaceScoped }

// resolveKeyRoot fills in the default key root and checks that rooted
// storage (a watch cache) holds the keys under root: before, a custom root
// silently went past the cache to the backend.
func resolveKeyRoot(root *string, resource meta.GroupResource, st storage.Interface) error {
	r, rooted := st.(storage.Rooted)
	switch {
	case *root == "" && rooted:
		*root = r.KeyRoot()
	case *root == "":
		*root = storage.KeyRoot(resource)
	case rooted && strings.TrimSuffix(*root, "/") != r.KeyRoot():
		return fmt.Errorf("registry: KeyRoot %q of %v is not the root %q its storage caches; get its storage with storage.ForRoot", *root, resource, r.KeyRoot())
	}
	*root = strings.TrimSuffix(*root, "/")
	return nil
}

// key is the storage key of one object; the storage package owns the
// layout (storage.Key).
func (s *Store[T]) key(ns, name string) string {
	if !s.opts.NamespaceScoped {
		ns = ""
	}
	return storage.Key(s.opts.KeyRoot, ns, name)
}

func (s *Store[T]) prefix(ns string) string {
	if !s.opts.NamespaceScoped {
		ns = ""
	}
	return storage.KeyPrefix(s.opts.KeyRoot, ns)
}

func (s *Store[T]) now() meta.Time { return meta.NewTime(s.opts.Now().UTC().Truncate(time.Second)) }

// WriteOptions are common to writes.
type WriteOptions struct {
	// DryRun runs every step but persists nothing.
	DryRun bool
	// Admit is mutating admission: it may change obj (old is nil on create).
	Admit func(ctx context.Context, obj, old meta.Object) error
	// Validate is validating admission, run after the strategy's validation.
	Validate func(ctx context.Context, obj, old meta.Object) error
}

// UpdateOptions tune Update.
type UpdateOptions struct {
	WriteOptions
	// Subresource is "" for the object itself or "status".
	Subresource string
	// Preconditions, when set, must hold for the stored object before the
	// update is computed (409 Conflict otherwise). A PUT sets the uid of its
	// body here, as kube-apiserver does.
	Preconditions *meta.Preconditions
}

// DeleteOptions tune Delete.
type DeleteOptions struct {
	DryRun        bool
	Preconditions *meta.Preconditions
	// PropagationPolicy and the deprecated OrphanDependents say what
	// becomes of the object's dependents (at most one is set: the
	// handlers refuse both). They count only with GarbageCollection.
	PropagationPolicy *meta.DeletionPropagation
	OrphanDependents  *bool
	// GarbageCollection says a garbage collector serves this store's
	// objects, as kube-apiserver's --enable-garbage-collector: Orphan then
	// adds the orphan finalizer and Foreground the foregroundDeletion one
	// (the object stays, marked, until the collector removes them);
	// Background, the default, deletes at once and leaves the dependents
	// to the collector. Without it the policy is ignored: nothing would
	// remove those finalizers.
	GarbageCollection bool
	// Validate is validating admission for the delete, given the current object.
	Validate func(ctx context.Context, old meta.Object) error
}

// UpdateFunc returns the updated object given a private copy of the
// current one (a zero T when the object does not exist and the store
// allows create on update).
type UpdateFunc[T meta.Object] func(ctx context.Context, current T) (T, error)

// Get returns the named object. The result may be shared: do not modify it.
func (s *Store[T]) Get(ctx context.Context, ns, name string, opts meta.GetOptions) (T, *storage.Memo, error) {
	kv, err := s.getKV(ctx, ns, name, opts)
	if err != nil {
		var zero T
		return zero, nil, err
	}
	obj, err := s.decodeStored(kv)
	return obj, kv.Memo, err
}

// getKV reads the stored value Get decodes.
func (s *Store[T]) getKV(ctx context.Context, ns, name string, opts meta.GetOptions) (storage.KeyValue, error) {
	gopts := storage.GetOptions{}
	if rv := opts.ResourceVersion; rv != "" && rv != "0" {
		n, err := parseResourceVersion(rv)
		if err != nil {
			return storage.KeyValue{}, err
		}
		gopts.MinRevision = n
	}
	kv, err := s.opts.Storage.Get(ctx, s.key(ns, name), gopts)
	if err != nil {
		return kv, s.storageError(err, name)
	}
	return kv, nil
}

// Create stores a new object, filling system metadata, and returns it as stored.
func (s *Store[T]) Create(ctx context.Context, ns string, obj T, opts WriteOptions) (T, error) {
	var zero T
	obj, generated, err := s.prepareCreate(ctx, ns, obj, opts)
	if err != nil {
		return zero, err
	}
	m := obj.GetObjectMeta()
	if opts.DryRun {
		// A dry run answers what the create would: kube-apiserver's dry-run
		// storage reads the key and refuses a name that is taken.
		kv, err := s.opts.Storage.Get(ctx, s.key(m.Namespace, m.Name), storage.GetOptions{IgnoreNotFound: true})
		if err != nil {
			return zero, s.storageError(err, m.Name)
		}
		if kv.Value != nil {
			return zero, meta.NewAlreadyExists(s.opts.Resource, m.Name)
		}
		return obj, nil
	}
	// A generated name may collide; try a few fresh suffixes as
	// kube-apiserver does before giving up.
	for attempt := 0; ; attempt++ {
		data, err := s.encodeForStorage(obj)
		if err != nil {
			return zero, err
		}
		rev, err := s.opts.Storage.Create(ctx, s.key(m.Namespace, m.Name), data)
		if err == nil {
			m.ResourceVersion = strconv.FormatInt(rev, 10)
			return obj, nil
		}
		if generated && errors.Is(err, storage.ErrAlreadyExists) {
			if attempt < 7 {
				m.Name = generateName(m.GenerateName)
				continue
			}
			return zero, s.generateNameConflict(m.Name)
		}
		return zero, s.storageError(err, m.Name)
	}
}

// prepareCreate runs every step of a create short of writing, in
// kube-apiserver's order: defaults, mutating admission, system metadata and
// PrepareForCreate, validation, validating admission. It reports whether
// the server picked the name (from generateName).
func (s *Store[T]) prepareCreate(ctx context.Context, ns string, obj T, opts WriteOptions) (T, bool, error) {
	var zero T
	m := obj.GetObjectMeta()
	if err := s.checkNamespace(m, ns); err != nil {
		return zero, false, err
	}
	if m.ResourceVersion != "" {
		return zero, false, meta.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	s.setDefaults(obj)
	if opts.Admit != nil {
		if err := opts.Admit(ctx, obj, nil); err != nil {
			return zero, false, err
		}
		// Admission may not move the object.
		if err := s.checkNamespace(m, ns); err != nil {
			return zero, false, err
		}
	}
	generated := m.Name == "" && m.GenerateName != ""
	s.beforeCreate(ctx, obj)
	if s.opts.MetadataErrorsFirst {
		errs := ValidateObjectMeta(m, s.opts.NamespaceScoped, s.opts.NameValidator)
		if errs = append(errs, s.opts.Strategy.Validate(ctx, obj)...); len(errs) > 0 {
			return zero, false, meta.NewInvalid(s.errKind, m.Name, errs)
		}
	} else {
		// k8s.io/apiserver's rest.BeforeCreate: the strategy's errors
		// alone, then, once it passes, the metadata's.
		if errs := s.opts.Strategy.Validate(ctx, obj); len(errs) > 0 {
			return zero, false, meta.NewInvalid(s.errKind, m.Name, errs)
		}
		if errs := ValidateObjectMeta(m, s.opts.NamespaceScoped, s.opts.NameValidator); len(errs) > 0 {
			return zero, false, meta.NewInvalid(s.errKind, m.Name, errs)
		}
	}
	if opts.Validate != nil {
		if err := opts.Validate(ctx, obj, nil); err != nil {
			return zero, false, err
		}
	}
	return obj, generated, nil
}

// generateNameConflict is kube-apiserver's answer when every generated name
// it tried was taken: AlreadyExists, but saying the server picked the name
// and asking the client to retry in a second.
func (s *Store[T]) generateNameConflict(name string) error {
	se := meta.NewAlreadyExists(s.opts.Resource, name)
	se.ErrStatus.Message += ", the server was not able to generate a unique name for the object"
	se.ErrStatus.Details.RetryAfterSeconds = 1
	return se
}

func (s *Store[T]) checkNamespace(m *meta.ObjectMeta, ns string) error {
	if !s.opts.NamespaceScoped {
		m.Namespace = ""
		return nil
	}
	if m.Namespace == "" {
		m.Namespace = ns
	} else if ns != "" && m.Namespace != ns {
		return meta.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// beforeCreate fills what the server owns on a new object.
func (s *Store[T]) beforeCreate(ctx context.Context, obj T) {
	m := obj.GetObjectMeta()
	m.DeletionTimestamp = nil
	m.DeletionGracePeriodSeconds = nil
	m.SelfLink = ""
	m.UID = uuid.NewString()
	m.CreationTimestamp = s.now()
	m.Generation = 1
	if s.opts.NoGeneration {
		m.Generation = 0
	}
	if m.Name == "" && m.GenerateName != "" {
		m.Name = generateName(m.GenerateName)
	}
	if s.opts.StatusSubresource {
		s.ti.resetStatus(obj)
	}
	s.opts.Strategy.PrepareForCreate(ctx, obj)
}

const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// generateName appends five random characters from the alphabet
// kube-apiserver uses (no vowels, no ambiguous digits).
func generateName(prefix string) string {
	const maxGeneratedNameLength = 63 - 5
	if len(prefix) > maxGeneratedNameLength {
		prefix = prefix[:maxGeneratedNameLength]
	}
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	for i := range b {
		b[i] = nameAlphabet[int(b[i])%len(nameAlphabet)]
	}
	return prefix + string(b)
}

var errDeleteInstead = errors.New("finalizers emptied on an object being deleted")

// Update changes the named object with fn, retrying on write races, and
// reports whether it was created.
func (s *Store[T]) Update(ctx context.Context, ns, name string, fn UpdateFunc[T], opts UpdateOptions) (T, bool, error) {
	var zero T
	key := s.key(ns, name)
	if opts.DryRun {
		kv, err := s.opts.Storage.Get(ctx, key, storage.GetOptions{IgnoreNotFound: true})
		if err != nil {
			return zero, false, s.storageError(err, name)
		}
		obj, _, created, err := s.prepareUpdate(ctx, ns, name, kv, fn, opts)
		return obj, created, err
	}
	var (
		result  T
		created bool
	)
	kv, err := s.opts.Storage.GuaranteedUpdate(ctx, key, storage.UpdateOptions{IgnoreNotFound: s.opts.AllowCreateOnUpdate},
		func(cur storage.KeyValue) ([]byte, error) {
			obj, data, c, err := s.prepareUpdate(ctx, ns, name, cur, fn, opts)
			if err != nil {
				if errors.Is(err, errDeleteInstead) {
					result = obj
				}
				return nil, err
			}
			result, created = obj, c
			return data, nil
		})
	if errors.Is(err, errDeleteInstead) {
		// The last finalizer is gone from an object marked for deletion:
		// the update completes the delete, as in Kubernetes.
		out, err := s.deleteFinalized(ctx, key, name, result)
		return out, false, err
	}
	if err != nil {
		return zero, false, s.storageError(err, name)
	}
	if isNil(result) {
		return zero, false, meta.NewInternalError(errors.New("update produced no object"))
	}
	result.GetObjectMeta().ResourceVersion = strconv.FormatInt(kv.Revision, 10)
	return result, created, nil
}

// prepareUpdate computes the object an update writes, given the current
// stored value (nil Value when absent).
func (s *Store[T]) prepareUpdate(ctx context.Context, ns, name string, cur storage.KeyValue, fn UpdateFunc[T], opts UpdateOptions) (T, []byte, bool, error) {
	var zero T
	if cur.Value == nil {
		if !s.opts.AllowCreateOnUpdate || opts.Subresource != "" {
			return zero, nil, false, meta.NewNotFound(s.opts.Resource, name)
		}
		if err := s.checkUpdatePreconditions(opts.Preconditions, name, &meta.ObjectMeta{}); err != nil {
			return zero, nil, false, err
		}
		obj, err := fn(ctx, zero)
		if err != nil {
			return zero, nil, false, err
		}
		if err := s.checkName(obj.GetObjectMeta(), ns, name); err != nil {
			return zero, nil, false, err
		}
		obj.GetObjectMeta().ResourceVersion = ""
		created, _, err := s.prepareCreate(ctx, ns, obj, opts.WriteOptions)
		if err != nil {
			return zero, nil, false, err
		}
		data, err := s.encodeForStorage(created)
		return created, data, true, err
	}
	old, err := s.decodeFresh(cur.Value, cur.Revision)
	if err != nil {
		return zero, nil, false, err
	}
	if err := s.checkUpdatePreconditions(opts.Preconditions, name, old.GetObjectMeta()); err != nil {
		return zero, nil, false, err
	}
	current, err := s.decodeFresh(cur.Value, cur.Revision)
	if err != nil {
		return zero, nil, false, err
	}
	obj, err := fn(ctx, current)
	if err != nil {
		return zero, nil, false, err
	}
	m, om := obj.GetObjectMeta(), old.GetObjectMeta()
	if err := s.checkName(m, ns, name); err != nil {
		return zero, nil, false, err
	}
	switch {
	case m.ResourceVersion == "" && !s.opts.AllowUnconditionalUpdate:
		// kube-apiserver names the resource, not the kind, in this one
		// error: "flunders.wardle.example.com "x" is invalid: ...".
		qualifiedKind := meta.GroupKind{Group: s.opts.Resource.Group, Kind: s.opts.Resource.Resource}
		return zero, nil, false, meta.NewInvalid(qualifiedKind, name, meta.FieldErrors{
			meta.Invalid(meta.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update")})
	case m.ResourceVersion != "" && m.ResourceVersion != om.ResourceVersion:
		return zero, nil, false, meta.NewConflict(s.opts.Resource, name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	s.setDefaults(obj)
	if opts.Admit != nil {
		if err := opts.Admit(ctx, obj, old); err != nil {
			return zero, nil, false, err
		}
	}
	s.beforeUpdate(ctx, obj, old, opts.Subresource)
	// rest.BeforeUpdate's order: the metadata, its changes, then the
	// strategy's errors, in one Invalid error.
	errs := ValidateObjectMeta(m, s.opts.NamespaceScoped, s.opts.NameValidator)
	errs = append(errs, ValidateObjectMetaUpdate(m, om)...)
	if opts.Subresource == "status" {
		if ss, ok := s.opts.Strategy.(StatusStrategy[T]); ok {
			errs = append(errs, ss.ValidateStatusUpdate(ctx, obj, old)...)
		}
	} else {
		errs = append(errs, s.opts.Strategy.ValidateUpdate(ctx, obj, old)...)
	}
	if len(errs) > 0 {
		return zero, nil, false, meta.NewInvalid(s.errKind, name, errs)
	}
	if opts.Validate != nil {
		if err := opts.Validate(ctx, obj, old); err != nil {
			return zero, nil, false, err
		}
	}
	if m.DeletionTimestamp != nil && !s.hasFinalizers(obj) && !opts.DryRun {
		return obj, nil, false, errDeleteInstead
	}
	data, err := s.encodeForStorage(obj)
	return obj, data, false, err
}

// checkUpdatePreconditions checks an update's preconditions against the
// stored object (an empty one when the update would create it), before the
// update is computed, as kube-apiserver's storage does: a PUT whose body
// carries another object's uid is a conflict, not an invalid update.
// kube-apiserver wraps the message in a StorageError naming the etcd key;
// the key stays inside the server here.
func (s *Store[T]) checkUpdatePreconditions(p *meta.Preconditions, name string, stored *meta.ObjectMeta) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != stored.UID {
		return meta.NewConflict(s.opts.Resource, name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, stored.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != stored.ResourceVersion {
		return meta.NewConflict(s.opts.Resource, name,
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, stored.ResourceVersion))
	}
	return nil
}

func (s *Store[T]) checkName(m *meta.ObjectMeta, ns, name string) error {
	if m.Name == "" {
		m.Name = name
	} else if m.Name != name {
		return meta.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.Name, name))
	}
	return s.checkNamespace(m, ns)
}

// setDefaults applies the strategy's defaults (Defaulter), if it has
// any: kube-apiserver defaults a body as it decodes it, before admission.
func (s *Store[T]) setDefaults(obj T) {
	if d, ok := s.opts.Strategy.(Defaulter[T]); ok {
		d.Default(obj)
	}
}

// beforeUpdate carries over what an update may not change, applies the
// status subresource split and bumps the generation on spec changes.
func (s *Store[T]) beforeUpdate(ctx context.Context, obj, old T, subresource string) {
	m, om := obj.GetObjectMeta(), old.GetObjectMeta()
	if s.opts.StatusSubresource {
		if subresource == "status" {
			// Only status may change through /status; metadata and spec
			// are the current ones, as for custom resources in Kubernetes,
			// but for managedFields, which record the status write.
			s.ti.copySpec(obj, old)
			managed := m.ManagedFields
			*m = *om
			m.ManagedFields = managed
		} else {
			s.ti.copyStatus(obj, old)
		}
	}
	m.Generation = om.Generation
	if m.UID == "" {
		m.UID = om.UID
	}
	m.CreationTimestamp = om.CreationTimestamp
	if om.DeletionTimestamp != nil {
		m.DeletionTimestamp = om.DeletionTimestamp
	}
	if om.DeletionGracePeriodSeconds != nil {
		m.DeletionGracePeriodSeconds = om.DeletionGracePeriodSeconds
	}
	if subresource == "" {
		s.opts.Strategy.PrepareForUpdate(ctx, obj, old)
		if !s.opts.NoGeneration && !s.ti.specEqual(obj, old) {
			m.Generation = om.Generation + 1
		}
	}
}

// deleteFinalized completes the delete of obj, whose update emptied its
// finalizers while it was marked for deletion. Writes that came between
// the update and the delete do not stop it (finalizers cannot be added to
// an object being deleted), but a namesake created meanwhile is not
// deleted. When another update got there first the object is gone already:
// the caller still gets the object it made (200), as kube-apiserver
// answers the loser of such a race.
func (s *Store[T]) deleteFinalized(ctx context.Context, key, name string, obj T) (T, error) {
	var zero T
	uid := obj.GetObjectMeta().UID
	out, err := s.opts.Storage.Delete(ctx, key, storage.DeleteOptions{Precondition: func(cur storage.KeyValue) error {
		stored, err := s.decodeFresh(cur.Value, cur.Revision)
		if err != nil {
			return err
		}
		if stored.GetObjectMeta().UID != uid {
			return storage.NewNotFound(key)
		}
		return nil
	}})
	if errors.Is(err, storage.ErrNotFound) {
		return obj, nil
	}
	if err != nil {
		return zero, s.storageError(err, name)
	}
	// Clients expect the object they sent back from a successful update
	// (without the finalizers), not the last stored one, which still lists
	// them.
	obj.GetObjectMeta().ResourceVersion = strconv.FormatInt(out.Revision, 10)
	return obj, nil
}

// errDeleteNow aborts marking an object for deletion whose finalizers were
// removed since the delete read it: it is deleted instead.
var errDeleteNow = errors.New("no finalizers left: delete the object")

// markForDeletion sets what a delete sets on an object with finalizers and
// reports whether anything changed (not when it is marked already).
func (s *Store[T]) markForDeletion(obj T) bool {
	m := obj.GetObjectMeta()
	if m.DeletionTimestamp != nil {
		return false
	}
	now := s.now()
	zeroGrace := int64(0)
	m.DeletionTimestamp = &now
	m.DeletionGracePeriodSeconds = &zeroGrace
	// The desired state changed: bump generation as kube-apiserver does on
	// graceful deletion, where the kind keeps one.
	if m.Generation > 0 {
		m.Generation++
	}
	if f, ok := s.opts.Strategy.(FinalizingStrategy[T]); ok {
		f.PrepareForDelete(obj)
	}
	return true
}

// hasFinalizers reports whether obj has finalizers in its metadata, or of
// its own (FinalizingStrategy): a delete then only marks it.
func (s *Store[T]) hasFinalizers(obj T) bool {
	if len(obj.GetObjectMeta().Finalizers) > 0 {
		return true
	}
	f, ok := s.opts.Strategy.(FinalizingStrategy[T])
	return ok && f.Finalizing(obj)
}

// markDeleting sets deletionTimestamp on an object with finalizers; the
// finalizers' owners finish the delete by removing them. It fails with
// errDeleteNow when the finalizers are gone by the time it writes: marking
// such an object would leave it terminating forever.
func (s *Store[T]) markDeleting(ctx context.Context, key, name string, opts DeleteOptions, check func(T) error) (T, error) {
	var zero, result T
	kv, err := s.opts.Storage.GuaranteedUpdate(ctx, key, storage.UpdateOptions{}, func(cur storage.KeyValue) ([]byte, error) {
		obj, err := s.decodeFresh(cur.Value, cur.Revision)
		if err != nil {
			return nil, err
		}
		if err := check(obj); err != nil {
			return nil, err
		}
		changed := setGCFinalizers(obj.GetObjectMeta(), opts)
		if !s.hasFinalizers(obj) {
			return nil, errDeleteNow
		}
		result = obj
		if !s.markForDeletion(obj) && !changed {
			return cur.Value, nil
		}
		return s.encodeForStorage(obj)
	})
	if errors.Is(err, errDeleteNow) {
		return zero, err
	}
	if err != nil {
		return zero, s.storageError(err, name)
	}
	result.GetObjectMeta().ResourceVersion = strconv.FormatInt(kv.Revision, 10)
	return result, nil
}

// Delete deletes the named object. An object with finalizers is only marked
// (deletionTimestamp set) and stays until its finalizers are removed; the
// boolean reports whether the object is gone.
func (s *Store[T]) Delete(ctx context.Context, ns, name string, opts DeleteOptions) (T, bool, error) {
	var zero T
	key := s.key(ns, name)
	check := func(cur T) error {
		m := cur.GetObjectMeta()
		if p := opts.Preconditions; p != nil {
			// kube-apiserver's words (rest.BeforeDelete), which name the
			// kind where other conflicts name the resource.
			gk := meta.GroupResource{Group: s.errKind.Group, Resource: s.errKind.Kind}
			if p.UID != nil && *p.UID != m.UID {
				return meta.NewConflict(gk, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, m.UID))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != m.ResourceVersion {
				return meta.NewConflict(gk, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, m.ResourceVersion))
			}
		}
		if opts.Validate != nil {
			return opts.Validate(ctx, cur)
		}
		return nil
	}
	for {
		kv, err := s.opts.Storage.Get(ctx, key, storage.GetOptions{})
		if err != nil {
			return zero, false, s.storageError(err, name)
		}
		cur, err := s.decodeFresh(kv.Value, kv.Revision)
		if err != nil {
			return zero, false, err
		}
		if err := check(cur); err != nil {
			return zero, false, err
		}
		// cur is a private copy: the finalizers the policy asks for on it
		// say whether the delete only marks the object.
		setGCFinalizers(cur.GetObjectMeta(), opts)
		if s.hasFinalizers(cur) {
			if opts.DryRun {
				// What the delete would answer: the object marked.
				s.markForDeletion(cur)
				return cur, false, nil
			}
			out, err := s.markDeleting(ctx, key, name, opts, check)
			if errors.Is(err, errDeleteNow) {
				continue
			}
			return out, false, err
		}
		if opts.DryRun {
			return cur, true, nil
		}
		out, err := s.opts.Storage.Delete(ctx, key, storage.DeleteOptions{ExpectedRevision: kv.Revision})
		if errors.Is(err, storage.ErrConflict) {
			continue // changed under us: check the preconditions again
		}
		if err != nil {
			return zero, false, s.storageError(err, name)
		}
		obj, err := s.decodeFresh(out.Value, out.Revision)
		return obj, true, err
	}
}

func parseResourceVersion(rv string) (int64, error) {
	n, err := strconv.ParseUint(rv, 10, 63)
	if err != nil {
		// kube-apiserver's words: its versioner's field error, wrapped.
		fe := meta.Invalid(meta.NewPath("resourceVersion"), rv, err.Error())
		return 0, meta.NewBadRequest("invalid resource version: " + fe.Error())
	}
	return int64(n), nil
}

// storageError turns a storage error into the Status kube-apiserver answers.
// What a client reads names no storage key and carries no error chain: a
// backend's failure is logged here and answered with a fixed message.
func (s *Store[T]) storageError(err error, name string) error {
	var se *meta.StatusError
	if errors.As(err, &se) {
		return err
	}
	var e *storage.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.DeadlineExceeded) {
			return meta.NewServerTimeout(s.opts.Resource, "request", 1)
		}
		if errors.Is(err, context.Canceled) {
			return meta.NewTimeout("request did not complete within requested timeout - context canceled", 0)
		}
		s.logStorageError(err)
		return meta.NewInternalError(errors.New("the storage request failed"))
	}
	switch e.Code {
	case storage.CodeNotFound:
		return meta.NewNotFound(s.opts.Resource, name)
	case storage.CodeAlreadyExists:
		return meta.NewAlreadyExists(s.opts.Resource, name)
	case storage.CodeConflict:
		return meta.NewConflict(s.opts.Resource, name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	case storage.CodeExpired:
		return meta.NewResourceExpired(clientMessage(e, "too old resource version"))
	case storage.CodeTooLargeResourceVersion:
		st := meta.NewTimeout(clientMessage(e, "Too large resource version"), 1)
		st.ErrStatus.Details.Causes = []meta.StatusCause{{Type: "ResourceVersionTooLarge", Message: "Too large resource version"}}
		return st
	case storage.CodeInvalidObject:
		return meta.NewBadRequest(clientMessage(e, "invalid request"))
	case storage.CodeUnavailable:
		s.logStorageError(err)
		return meta.NewServiceUnavailable("storage is unavailable")
	case storage.CodeTooLarge:
		// kube-apiserver's 413 for a body over its limit, with the limit.
		if e.Limit > 0 {
			return meta.NewRequestEntityTooLarge(fmt.Sprintf("limit is %d", e.Limit))
		}
		return meta.NewRequestEntityTooLarge(clientMessage(e, "the object is larger than the storage accepts"))
	}
	s.logStorageError(err)
	return meta.NewInternalError(errors.New("the storage request failed"))
}

// clientMessage is the message of e written for clients, or def.
func clientMessage(e *storage.Error, def string) string {
	if e.Message != "" {
		return e.Message
	}
	return def
}

// logStorageError logs what a client is not told of a failed storage
// request: the error chain, with the key in it.
func (s *Store[T]) logStorageError(err error) {
	slog.Warn("storage request failed", "resource", s.opts.Resource.String(), "err", err)
}
