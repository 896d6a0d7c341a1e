package fieldmanager

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/apikit-dev/apikit/meta"
)

// scaleAPIVersion is the version of the Scale objects a scale subresource
// reads and writes.
const scaleAPIVersion = "autoscaling/v1"

// ScaleUpdate records a write through an object's scale subresource in
// entries, the object's managedFields, as kube-apiserver's scale handler
// (k8s.io/apimachinery's managedfields.ScaleHandler) does: the Scale's
// field manager sees the managers of the object's replicas field as
// managers of the Scale's spec.replicas, the writer takes the field when
// the write changed it, and the result goes back to the object's entries.
//
// replicas is the path of the object's replicas field (spec, replicas),
// apiVersion the version the write went through, manager the writer
// (ManagerName) and changed whether the write changed the replicas.
//
// What kube-apiserver's handler does, and so what this does: the entry of
// a writer new to the field has no time (the handler takes the times of
// the object's entries, and it has none); an entry that loses the field
// keeps its time; and, since the Scale's managers are keyed by the Scale's
// apiVersion, an Update entry owning the replicas is split on a write that
// changes nothing: its other fields stay, the replicas go to an entry of
// the same manager without a time.
func ScaleUpdate(entries []meta.ManagedFields, replicas []string, apiVersion, manager string, changed bool) ([]meta.ManagedFields, error) {
	parent, err := decodeManaged(entries)
	if err != nil {
		return nil, fmt.Errorf("decoding managedFields: %w", err)
	}
	segments := make([]any, len(replicas))
	for i, s := range replicas {
		segments[i] = s
	}
	path, err := fieldpath.MakePath(segments...)
	if err != nil {
		return nil, fmt.Errorf("replicas path %v: %w", replicas, err)
	}
	only := fieldpath.NewSet(path)

	// The Scale's managers: those of the object's replicas, under their
	// identity as Scale managers.
	scale := map[string]bool{}
	for id, vs := range parent.fields {
		if vs.Set().Has(path) {
			sid, err := withAPIVersion(id, scaleAPIVersion)
			if err != nil {
				return nil, err
			}
			scale[sid] = vs.Applied()
		}
	}
	if changed {
		// The writer takes spec.replicas; the others lose their only
		// field, and with it their entry.
		writer, err := managerID(meta.ManagedFields{Manager: manager, Operation: OperationUpdate, APIVersion: scaleAPIVersion, Subresource: "scale"})
		if err != nil {
			return nil, err
		}
		scale = map[string]bool{writer: false}
	}

	// Back to the object: an entry owning the replicas keeps them if the
	// Scale kept its manager, and loses them otherwise.
	out := emptyManaged()
	for id, vs := range parent.fields {
		if !vs.Set().Has(path) {
			out.fields[id], out.times[id] = vs, parent.times[id]
			continue
		}
		if _, ok := scale[id]; ok {
			out.fields[id], out.times[id] = vs, parent.times[id]
			delete(scale, id)
			continue
		}
		if rest := vs.Set().Difference(only); !rest.Empty() {
			out.fields[id] = fieldpath.NewVersionedSet(rest, vs.APIVersion(), vs.Applied())
			out.times[id] = parent.times[id]
		}
	}
	for id, applied := range scale {
		out.fields[id] = fieldpath.NewVersionedSet(only, fieldpath.APIVersion(apiVersion), applied)
		out.times[id] = parent.times[id]
	}
	return out.encode()
}

// withAPIVersion returns the manager identifier id with another
// apiVersion; an applier's has none.
func withAPIVersion(id, apiVersion string) (string, error) {
	var e meta.ManagedFields
	if err := json.Unmarshal([]byte(id), &e); err != nil {
		return "", fmt.Errorf("decoding manager identifier %s: %w", id, err)
	}
	e.APIVersion = apiVersion
	return managerID(e)
}
