package gc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unique"

	"github.com/google/uuid"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// node is what the collector keeps of an object, as kube's collector keeps
// a node of its graph: the object's identity (key and uid), its
// resourceVersion (for the informer), whether it is being deleted, the two
// finalizers collecting reads, and its owner references. Labels,
// annotations, managedFields and other finalizers (most of an object's
// metadata) are not kept. The collector keeps a node per object of every
// kind it follows, so a node is compact: 80 bytes beside its name, with the
// uid a UUID's 16 bytes and the resourceVersion a number, as the registry
// makes them; what most objects lack (owners, a uid or resourceVersion of
// another form) is in an allocation of its own (gc TestMemoryPerObject).
type node struct {
	namespace, name string
	// uuid is the uid when canonicalUID; extra.uid holds it otherwise.
	uuid [16]byte
	// rev is the resourceVersion when above zero; extra.rv holds it
	// otherwise.
	rev                int64
	extra              *nodeExtra
	canonicalUID       bool
	deleting           bool // deletionTimestamp set
	orphan, foreground bool // the finalizers of the same meaning
}

// nodeExtra is what a node keeps of few objects.
type nodeExtra struct {
	owners  []meta.OwnerReference
	uid, rv string
}

// UID returns the object's uid.
func (n *node) UID() string {
	if n.canonicalUID {
		return uuid.UUID(n.uuid).String()
	}
	if n.extra != nil {
		return n.extra.uid
	}
	return ""
}

// hasUID reports whether the object's uid is uid, without formatting it.
func (n *node) hasUID(uid string) bool {
	if u, ok := parseCanonicalUID(uid); ok {
		return n.canonicalUID && u == n.uuid
	}
	return !n.canonicalUID && n.UID() == uid
}

// needed reports whether collecting reads the node from the cache: its
// object has owners, is being deleted or has a finalizer collecting acts
// on. Owners are read live.
func (n *node) needed() bool {
	return len(n.owners()) > 0 || n.deleting || n.orphan || n.foreground
}

// owners returns the object's owner references: read-only.
func (n *node) owners() []meta.OwnerReference {
	if n.extra == nil {
		return nil
	}
	return n.extra.owners
}

// resourceVersion returns the object's resourceVersion.
func (n *node) resourceVersion() string {
	if n.rev > 0 {
		return strconv.FormatInt(n.rev, 10)
	}
	if n.extra != nil {
		return n.extra.rv
	}
	return ""
}

// InformerKey implements informer.Keyed: the informer reads the node's key
// without an ObjectMeta.
func (n *node) InformerKey() (namespace, name, resourceVersion string) {
	return n.namespace, n.name, n.resourceVersion()
}

var _ informer.Keyed = (*node)(nil)

// GetObjectMeta returns what the node keeps as a new ObjectMeta at each
// call (meta.Object, the informer's constraint, asks for one; nothing of
// the collector calls it). Its finalizers are the two the node records,
// and a deletionTimestamp, when set, is the zero time.
func (n *node) GetObjectMeta() *meta.ObjectMeta {
	m := &meta.ObjectMeta{Namespace: n.namespace, Name: n.name, UID: n.UID(), ResourceVersion: n.resourceVersion(), OwnerReferences: n.owners()}
	if n.deleting {
		m.DeletionTimestamp = &meta.Time{}
	}
	if n.orphan {
		m.Finalizers = append(m.Finalizers, meta.FinalizerOrphanDependents)
	}
	if n.foreground {
		m.Finalizers = append(m.Finalizers, meta.FinalizerDeleteDependents)
	}
	return m
}

// GetTypeMeta implements meta.Object: a node has no type of its own.
func (n *node) GetTypeMeta() *meta.TypeMeta { return &meta.TypeMeta{} }

// storedMetadata is the part of a stored object's JSON that a node is made
// of; encoding/json skips the rest.
type storedMetadata struct {
	Metadata struct {
		Name              string                `json:"name"`
		Namespace         string                `json:"namespace"`
		UID               string                `json:"uid"`
		DeletionTimestamp *meta.Time            `json:"deletionTimestamp"`
		OwnerReferences   []meta.OwnerReference `json:"ownerReferences"`
		Finalizers        []string              `json:"finalizers"`
	} `json:"metadata"`
}

// nodeOf makes an item's node. An item read from storage is read from its
// stored bytes, whose metadata are the served version's (conversion keeps
// the fields read here), with the revision as its resourceVersion: asking
// the item for its JSON would make the value's memo keep a copy of it for
// as long as the value is cached, which a value nothing else reads (an
// idle object) would not otherwise keep. Other items (a bookmark, a remote
// resource's) carry their object.
func nodeOf(it registry.Item) (*node, error) {
	value, rev, ok := it.Stored()
	if !ok {
		obj, err := it.Object()
		if err != nil {
			return nil, fmt.Errorf("reading an item's object: %w", err)
		}
		m := obj.GetObjectMeta()
		return newNode(m.Namespace, m.Name, m.UID, m.ResourceVersion, m.DeletionTimestamp != nil, m.OwnerReferences, m.Finalizers), nil
	}
	var s storedMetadata
	if err := json.Unmarshal(value, &s); err != nil {
		return nil, fmt.Errorf("reading an item's metadata: %w", err)
	}
	m := &s.Metadata
	return newNode(m.Namespace, m.Name, m.UID, strconv.FormatInt(rev, 10), m.DeletionTimestamp != nil, m.OwnerReferences, m.Finalizers), nil
}

// metadataOf reads an item's metadata as nodeOf does, from its stored
// bytes: the decoded object (Item.Object) would stay in the value's memo
// for as long as the value is cached, a copy of every dependent and owner
// the collector reads beside the stored bytes (~1.5 KB an object).
func metadataOf(it registry.Item) (*meta.ObjectMeta, error) {
	value, rev, ok := it.Stored()
	if !ok {
		obj, err := it.Object()
		if err != nil {
			return nil, err
		}
		return obj.GetObjectMeta(), nil
	}
	var s struct {
		Metadata meta.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(value, &s); err != nil {
		return nil, fmt.Errorf("reading an item's metadata: %w", err)
	}
	s.Metadata.ResourceVersion = strconv.FormatInt(rev, 10)
	return &s.Metadata, nil
}

func newNode(namespace, name, uid, rv string, deleting bool, owners []meta.OwnerReference, finalizers []string) *node {
	n := &node{
		// Objects share a few namespaces: one string each.
		namespace: unique.Make(namespace).Value(), name: name,
		deleting:   deleting,
		orphan:     slices.Contains(finalizers, meta.FinalizerOrphanDependents),
		foreground: slices.Contains(finalizers, meta.FinalizerDeleteDependents),
	}
	n.uuid, n.canonicalUID = parseCanonicalUID(uid)
	if r, err := strconv.ParseInt(rv, 10, 64); err == nil && r > 0 && strconv.FormatInt(r, 10) == rv {
		n.rev = r
	}
	if !n.canonicalUID || n.rev == 0 || len(owners) > 0 {
		n.extra = &nodeExtra{
			// A copy of their own length: decoding leaves room to grow.
			owners: slices.Clone(owners),
		}
		if !n.canonicalUID {
			n.extra.uid = uid
		}
		if n.rev == 0 {
			n.extra.rv = rv
		}
	}
	return n
}

// parseCanonicalUID reads a uid in the form the registry makes (a UUID in
// its canonical form: lowercase hex, 8-4-4-4-12).
func parseCanonicalUID(s string) (u [16]byte, ok bool) {
	if len(s) != 36 {
		return u, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return u, false
			}
			i++
		}
		hi, ok1 := lowerHex(s[i])
		lo, ok2 := lowerHex(s[i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
	}
	return u, true
}

func lowerHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
