package fieldmanager

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema"
)

// DefaultMaxUpdateManagers is how many Update entries an object keeps, as
// kube-apiserver: beyond it the oldest are merged into one
// "ancient-changes" entry per apiVersion.
const DefaultMaxUpdateManagers = 10

// LastAppliedAnnotation is client-side apply's record of what it applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// kubectlManager is the manager `kubectl apply --server-side` applies as;
// only it takes over what client-side apply recorded, as in Kubernetes.
const kubectlManager = "kubectl"

// stripped are fields no manager owns: the server sets them.
var stripped = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// CheckApplyPatch refuses an applied configuration of another kind or
// version, or one that sets managedFields, as kube-apiserver does before
// anything else.
func (m *Manager) CheckApplyPatch(patch []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			ManagedFields json.RawMessage `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &head); err != nil {
		return meta.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	gv, err := meta.ParseGroupVersion(head.APIVersion)
	if err != nil {
		// Kubernetes reads an unparsable apiVersion as no group-version.
		gv = meta.GroupVersion{}
	}
	if gvk := gv.WithKind(head.Kind); gvk != m.gvk {
		return meta.NewBadRequest(fmt.Sprintf("invalid object type: %s", gvkString(gvk)))
	}
	if mf := bytes.TrimSpace(head.Metadata.ManagedFields); len(mf) > 0 && !bytes.Equal(mf, []byte("null")) {
		return meta.NewBadRequest("metadata.managedFields must be nil")
	}
	return nil
}

// Manager keeps the managedFields of one resource in one served version,
// on its main resource or on one subresource. It is safe for concurrent use.
type Manager struct {
	typ         typed.ParseableType
	gvk         meta.GroupVersionKind
	version     fieldpath.APIVersion
	subresource string
	newObject   func() meta.Object
	updater     *merge.Updater
	// MaxUpdateManagers caps the Update entries (DefaultMaxUpdateManagers).
	maxUpdateManagers int
	now               func() meta.Time
}

// Config is what a Manager needs.
type Config struct {
	// Schemas and Schema are the resource's shape: Schema must refer to a
	// named schema of Schemas (as Set.AddType returns for a struct).
	Schemas *schema.Set
	Schema  *schema.Schema
	// GVK is the served group-version-kind; apply patches must name it.
	GVK meta.GroupVersionKind
	// Subresource is "" for the main resource, else e.g. "status".
	Subresource string
	// New returns an empty object of the served Go type.
	New func() meta.Object
	// Versions are the resource's served versions (this one included),
	// keyed by apiVersion, through which field sets recorded in another
	// version are converted to be compared. Without them such entries are
	// dropped when the object is written in this version.
	Versions map[string]Version
	// IgnoredFields are fields writes through this endpoint never own:
	// status on a main resource whose status is a subresource, as
	// kube-apiserver's reset fields.
	IgnoredFields *fieldpath.Set
}

// New returns the Manager of a resource.
func New(cfg Config) (*Manager, error) {
	if cfg.Schema == nil || cfg.Schema.Ref == "" {
		return nil, errors.New("fieldmanager: the resource's schema must be a named type")
	}
	s, err := cfg.Schemas.SMD()
	if err != nil {
		return nil, fmt.Errorf("fieldmanager: %w", err)
	}
	m := &Manager{
		typ:               typed.ParseableType{Schema: s, TypeRef: typedRef(cfg.Schema.Ref)},
		gvk:               cfg.GVK,
		version:           fieldpath.APIVersion(cfg.GVK.GroupVersion().String()),
		subresource:       cfg.Subresource,
		newObject:         cfg.New,
		maxUpdateManagers: DefaultMaxUpdateManagers,
		now:               meta.Now,
	}
	if !m.typ.IsValid() {
		return nil, fmt.Errorf("fieldmanager: no schema named %q", cfg.Schema.Ref)
	}
	conv, err := newConverter(s, m.version, cfg.Versions)
	if err != nil {
		return nil, err
	}
	builder := merge.UpdaterBuilder{Converter: conv}
	if cfg.IgnoredFields != nil && !cfg.IgnoredFields.Empty() {
		builder.IgnoredFields = map[fieldpath.APIVersion]*fieldpath.Set{m.version: cfg.IgnoredFields}
	}
	m.updater = builder.BuildUpdater()
	return m, nil
}

// Version is one served version of the resource, for conversions.
type Version struct {
	// Schema is the version's schema: a reference into Config.Schemas.
	Schema *schema.Schema
	// New returns an empty object of the version.
	New func() meta.Object
	// ToStorage and FromStorage convert an object of the version to the
	// storage version and back.
	ToStorage, FromStorage func(meta.Object) (meta.Object, error)
}

// converter moves typed values between the served versions of a resource
// through its storage version, as kube-apiserver converts managed field
// sets; a version it does not know is missing, and entries recorded in it
// are dropped.
type converter struct {
	schema   *smdschema.Schema
	own      fieldpath.APIVersion
	versions map[fieldpath.APIVersion]Version
	byType   map[string]fieldpath.APIVersion
}

var errOtherVersion = errors.New("fieldmanager: no conversion to that apiVersion")

func newConverter(s *smdschema.Schema, own fieldpath.APIVersion, versions map[string]Version) (*converter, error) {
	c := &converter{schema: s, own: own, versions: map[fieldpath.APIVersion]Version{}, byType: map[string]fieldpath.APIVersion{}}
	for apiVersion, v := range versions {
		if v.Schema == nil || v.Schema.Ref == "" || v.New == nil || v.ToStorage == nil || v.FromStorage == nil {
			return nil, fmt.Errorf("fieldmanager: version %s needs a named schema, New and both conversions", apiVersion)
		}
		c.versions[fieldpath.APIVersion(apiVersion)] = v
		c.byType[v.Schema.Ref] = fieldpath.APIVersion(apiVersion)
	}
	return c, nil
}

func (c *converter) Convert(v *typed.TypedValue, to fieldpath.APIVersion) (*typed.TypedValue, error) {
	if to == c.own && len(c.versions) == 0 {
		return v, nil
	}
	target, ok := c.versions[to]
	if !ok {
		if to == c.own {
			return v, nil
		}
		return nil, errOtherVersion
	}
	name := ""
	if ref := v.TypeRef(); ref.NamedType != nil {
		name = *ref.NamedType
	}
	if name == target.Schema.Ref {
		// The same Go type serves both versions: nothing to convert.
		return v, nil
	}
	from, ok := c.versions[c.byType[name]]
	if !ok {
		return nil, fmt.Errorf("fieldmanager: a value of type %q belongs to no served version", name)
	}
	data, err := value.ToJSON(v.AsValue())
	if err != nil {
		return nil, err
	}
	obj := from.New()
	if err := json.Unmarshal(data, obj); err != nil {
		return nil, err
	}
	stored, err := from.ToStorage(obj)
	if err != nil {
		return nil, err
	}
	out, err := target.FromStorage(stored)
	if err != nil {
		return nil, err
	}
	if data, err = json.Marshal(out); err != nil {
		return nil, err
	}
	tv, err := value.FromJSON(data)
	if err != nil {
		return nil, err
	}
	return typed.AsTyped(tv, c.schema, typedRef(target.Schema.Ref), typed.AllowDuplicates)
}

func (*converter) IsMissingVersionError(err error) bool { return errors.Is(err, errOtherVersion) }

// Manager returns the manager a request writes as: its fieldManager, else
// the first part of its User-Agent, as kube-apiserver names it.
func ManagerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	name, _, _ := strings.Cut(userAgent, "/")
	return name
}

// typedValue reads a Go object as a typed value of the resource's schema.
func (m *Manager) typedValue(obj any) (*typed.TypedValue, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return m.typedJSON(data, typed.AllowDuplicates)
}

// typedJSON types a JSON object. Stored objects may hold duplicate list
// keys (written before a list became a map, or by other patch types);
// applied configurations may not, as in kube-apiserver.
func (m *Manager) typedJSON(data []byte, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	v, err := value.FromJSON(data)
	if err != nil {
		return nil, err
	}
	return typed.AsTyped(v, m.typ.Schema, m.typ.TypeRef, opts...)
}

// Update records in obj's managedFields what manager changed from live
// (nil or an empty object on create) to obj. It never fails the write: on
// an error, obj keeps live's managedFields and the error is returned for
// the log, as kube-apiserver's UpdateNoErrors.
func (m *Manager) Update(live, obj meta.Object, manager string) error {
	if live == nil {
		live = m.newObject()
	}
	om := obj.GetObjectMeta()
	err := m.update(live, obj, manager)
	if err != nil {
		om.ManagedFields = live.GetObjectMeta().ManagedFields
	}
	return err
}

func (m *Manager) update(live, obj meta.Object, manager string) error {
	om := obj.GetObjectMeta()
	mf := m.decodeLiveOrNew(live, om.ManagedFields)
	om.ManagedFields = nil
	liveT, err := m.typedLive(live)
	if err != nil {
		return fmt.Errorf("the live object as %s: %w", m.gvk, err)
	}
	newT, err := m.typedValue(obj)
	if err != nil {
		return fmt.Errorf("the new object as %s: %w", m.gvk, err)
	}
	// Record under a placeholder, so that a manager whose write changed
	// nothing keeps its entry's time.
	const self = "current-operation"
	_, fields, err := m.updater.Update(liveT, newT, m.version, mf.fields, self)
	if err != nil {
		return fmt.Errorf("updating managed fields: %w", err)
	}
	mf.fields = fields
	strip(mf.fields, self)
	id, err := managerID(meta.ManagedFields{Manager: manager, Operation: OperationUpdate, APIVersion: string(m.version), Subresource: m.subresource})
	if err != nil {
		return err
	}
	if vs, ok := mf.fields[self]; ok {
		delete(mf.fields, self)
		if prev, ok := mf.fields[id]; ok {
			vs = fieldpath.NewVersionedSet(vs.Set().Union(prev.Set()), vs.APIVersion(), vs.Applied())
		}
		mf.fields[id] = vs
		t := m.now()
		mf.times[id] = &t
	}
	if err := m.capUpdateManagers(mf); err != nil {
		return err
	}
	om.ManagedFields, err = mf.encode()
	return err
}

// decodeLiveOrNew is the managedFields an update starts from: the new
// object's when it carries valid ones (a client may edit them), none when
// it asks for a reset, else the live object's, so that clients unaware of
// managedFields do not drop them. A subresource always starts from live.
func (m *Manager) decodeLiveOrNew(live meta.Object, sent []meta.ManagedFields) *managed {
	fromLive := func() *managed {
		mf, err := decodeManaged(live.GetObjectMeta().ManagedFields)
		if err != nil {
			return emptyManaged()
		}
		return mf
	}
	if m.subresource != "" {
		return fromLive()
	}
	if isReset(sent) {
		return emptyManaged()
	}
	mf, err := decodeManaged(sent)
	if err != nil || len(mf.fields) == 0 {
		return fromLive()
	}
	return mf
}

// typedLive types the live object without its managedFields, which no
// comparison needs. The registry hands each write a private copy of the
// live object, so they are set aside and put back rather than copied.
func (m *Manager) typedLive(live meta.Object) (*typed.TypedValue, error) {
	om := live.GetObjectMeta()
	saved := om.ManagedFields
	om.ManagedFields = nil
	defer func() { om.ManagedFields = saved }()
	return m.typedValue(live)
}

// strip removes the server-set fields from manager's set, and the manager
// when nothing is left.
func strip(fields fieldpath.ManagedFields, manager string) {
	vs, ok := fields[manager]
	if !ok {
		return
	}
	set := vs.Set().Difference(stripped)
	if set.Empty() {
		delete(fields, manager)
		return
	}
	fields[manager] = fieldpath.NewVersionedSet(set, vs.APIVersion(), vs.Applied())
}

// capUpdateManagers merges the oldest Update entries, per apiVersion, into
// an "ancient-changes" entry until at most maxUpdateManagers remain, as
// kube-apiserver does.
func (m *Manager) capUpdateManagers(mf *managed) error {
	var updaters []string
	for id, vs := range mf.fields {
		if !vs.Applied() {
			updaters = append(updaters, id)
		}
	}
	if len(updaters) <= m.maxUpdateManagers {
		return nil
	}
	sort.Slice(updaters, func(i, j int) bool {
		if a, b := unix(mf.times[updaters[i]]), unix(mf.times[updaters[j]]); a != b {
			return a < b
		}
		return updaters[i] < updaters[j]
	})
	first := map[fieldpath.APIVersion]string{}
	for i, n := 0, len(updaters); i < len(updaters) && n > m.maxUpdateManagers; i++ {
		id := updaters[i]
		vs, t := mf.fields[id], mf.times[id]
		bucket, err := managerID(meta.ManagedFields{Manager: "ancient-changes", Operation: OperationUpdate, APIVersion: string(vs.APIVersion())})
		if err != nil {
			return err
		}
		f, seen := first[vs.APIVersion()]
		if !seen {
			first[vs.APIVersion()] = id
			continue
		}
		if _, ok := mf.fields[bucket]; !ok {
			mf.fields[bucket] = mf.fields[f]
			delete(mf.fields, f)
		}
		mf.fields[bucket] = fieldpath.NewVersionedSet(vs.Set().Union(mf.fields[bucket].Set()), vs.APIVersion(), vs.Applied())
		delete(mf.fields, id)
		mf.times[bucket] = t
		n--
	}
	return nil
}

// sortedManagers lists the managers of conflicts in order.
func sortedManagers(m map[string][]fieldpath.Path) []string {
	return slices.Sorted(maps.Keys(m))
}

func typedRef(name string) smdschema.TypeRef { return smdschema.TypeRef{NamedType: &name} }
