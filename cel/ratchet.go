package cel

import (
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/schema/structural"
)

// ratchet is where a node stands in the pairing of the new object with
// the old one that kube-apiserver's CRDValidationRatcheting makes
// (k8s.io/apiserver's CorrelatedObject): a failed rule at the node is a
// warning when the node is paired with an old value it equals, or, when it
// cannot be paired, when its nearest paired ancestor equals its old value.
// The zero ratchet (a create) ratchets nothing.
type ratchet struct {
	// cur is the node's pairing, nil when it has none.
	cur *correlated
	// parent is the pairing of the node's parent when cur is set, else
	// of the nearest paired ancestor; nil at the root.
	parent *correlated
}

// unchanged reports whether failures at the node are ratcheted.
func (r ratchet) unchanged() bool {
	if r.cur != nil {
		return r.cur.equal()
	}
	return r.parent.equal()
}

// key is the ratchet of the node's field or map key k.
func (r ratchet) key(k string) ratchet {
	if r.cur == nil {
		return r
	}
	if r.parent == nil && (k == "apiVersion" || k == "kind") {
		// kube never ratchets the root's apiVersion and kind: both
		// objects were converted to one version, so they say nothing
		// of what the client sent.
		return ratchet{}
	}
	return ratchet{cur: r.cur.key(k), parent: r.cur}
}

// index is the ratchet of the node's item i.
func (r ratchet) index(i int) ratchet {
	if r.cur == nil {
		return r
	}
	return ratchet{cur: r.cur.index(i), parent: r.cur}
}

// correlated is a new value paired with the old value at the same place,
// with the schema of that place.
type correlated struct {
	val, old any
	schema   *schema.Schema
	// eq caches equal: 0 not known yet, 1 equal, 2 different.
	eq int8
	// oldItems indexes a map list's old items, built at the first index.
	oldItems structural.MapListItems
	indexed  bool
}

// key pairs the value's field or map key k with the old value's, if both
// values are objects holding k and the schema declares k (as a property
// or by additionalProperties): a field the schema does not declare is
// never paired, whatever the map type.
func (c *correlated) key(k string) *correlated {
	nv, ov, s, ok := c.keyed(k)
	if !ok {
		return nil
	}
	return &correlated{val: nv, old: ov, schema: s}
}

func (c *correlated) keyed(k string) (nv, ov any, s *schema.Schema, ok bool) {
	nm, okN := c.val.(map[string]any)
	om, okO := c.old.(map[string]any)
	if !okN || !okO || c.schema == nil {
		return nil, nil, nil, false
	}
	if nv, ok = nm[k]; !ok {
		return nil, nil, nil, false
	}
	if ov, ok = om[k]; !ok {
		return nil, nil, nil, false
	}
	if ps, found := c.schema.Property(k); found && ps != nil {
		return nv, ov, ps, true
	}
	if c.schema.AdditionalProperties != nil {
		return nv, ov, c.schema.AdditionalProperties, true
	}
	return nil, nil, nil, false
}

// index pairs the value's item i with an old item: only a map list's
// items are paired, by their keys; items of sets, atomic lists and lists
// without a list type never are.
func (c *correlated) index(i int) *correlated {
	nl, okN := c.val.([]any)
	_, okO := c.old.([]any)
	if !okN || !okO || i >= len(nl) || c.schema == nil || c.schema.Items == nil {
		return nil
	}
	if !c.indexed {
		c.oldItems, c.indexed = structural.NewMapListItems(c.schema, c.old), true
	}
	ov, ok := c.oldItems.Old(nl[i])
	if !ok || ov == nil {
		return nil
	}
	return &correlated{val: nl[i], old: ov, schema: c.schema.Items}
}

// equal reports whether the value equals its old value as kube compares
// them (structural.Unchanged). A nil receiver, a value without a pairing,
// is never equal.
func (c *correlated) equal() bool {
	if c == nil {
		return false
	}
	if c.eq == 0 {
		c.eq = 2
		if structural.Unchanged(c.schema, c.old, c.val) {
			c.eq = 1
		}
	}
	return c.eq == 1
}
