package gc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unique"

	"github.com/apikit-dev/apikit/informer"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// node is what the collector keeps of an object, as kube's collector keeps
// a node of its graph: the object's identity (key and uid), its
// resourceVersion (for the informer), whether it is being deleted, the two
// finalizers collecting reads, and its owner references. Labels,
// annotations, managedFields and other finalizers (most of an object's
// metadata) are not kept: a node is 96 bytes, a PartialObjectMetadata 288.
type node struct {
	namespace, name, uid, resourceVersion string
	owners                                []meta.OwnerReference
	deleting                              bool // deletionTimestamp set
	orphan, foreground                    bool // the finalizers of the same meaning
}

// InformerKey implements informer.Keyed: the informer reads the node's key
// without an ObjectMeta.
func (n *node) InformerKey() (namespace, name, resourceVersion string) {
	return n.namespace, n.name, n.resourceVersion
}

var _ informer.Keyed = (*node)(nil)

// GetObjectMeta returns what the node keeps as a new ObjectMeta at each
// call (meta.Object, the informer's constraint, asks for one; nothing of
// the collector calls it). Its finalizers are the two the node records,
// and a deletionTimestamp, when set, is the zero time.
func (n *node) GetObjectMeta() *meta.ObjectMeta {
	m := &meta.ObjectMeta{Namespace: n.namespace, Name: n.name, UID: n.uid, ResourceVersion: n.resourceVersion, OwnerReferences: n.owners}
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

func newNode(namespace, name, uid, rv string, deleting bool, owners []meta.OwnerReference, finalizers []string) *node {
	return &node{
		// Objects share a few namespaces: one string each.
		namespace: unique.Make(namespace).Value(), name: name, uid: uid, resourceVersion: rv,
		// A copy of their own length: decoding leaves room to grow.
		owners:     slices.Clone(owners),
		deleting:   deleting,
		orphan:     slices.Contains(finalizers, meta.FinalizerOrphanDependents),
		foreground: slices.Contains(finalizers, meta.FinalizerDeleteDependents),
	}
}
