package fieldmanager

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/apikit-dev/apikit/meta"
)

// Operations of managedFields entries.
const (
	OperationApply  = "Apply"
	OperationUpdate = "Update"
	fieldsV1        = "FieldsV1"
)

// managed is the decoded managedFields of an object: each manager's
// field set and when it last changed them. Managers are identified as
// Kubernetes identifies them: the JSON of their entry without fields,
// time and (for appliers) apiVersion.
type managed struct {
	fields fieldpath.ManagedFields
	times  map[string]*meta.Time
}

func emptyManaged() *managed {
	return &managed{fields: fieldpath.ManagedFields{}, times: map[string]*meta.Time{}}
}

// decodeManaged reads managedFields entries, refusing those Kubernetes
// refuses.
func decodeManaged(entries []meta.ManagedFields) (*managed, error) {
	m := &managed{fields: make(fieldpath.ManagedFields, len(entries)), times: make(map[string]*meta.Time, len(entries))}
	for i, e := range entries {
		switch e.Operation {
		case OperationApply, OperationUpdate:
		default:
			return nil, fmt.Errorf("operation must be `Apply` or `Update`")
		}
		if e.APIVersion == "" {
			return nil, fmt.Errorf("apiVersion must not be empty")
		}
		switch e.FieldsType {
		case fieldsV1:
		case "":
			return nil, fmt.Errorf("missing fieldsType in managed fields entry %d", i)
		default:
			return nil, fmt.Errorf("invalid fieldsType %q in managed fields entry %d", e.FieldsType, i)
		}
		id, err := managerID(e)
		if err != nil {
			return nil, err
		}
		set := fieldpath.NewSet()
		if len(e.FieldsV1) > 0 {
			if err := set.FromJSON(bytes.NewReader(e.FieldsV1)); err != nil {
				return nil, fmt.Errorf("error decoding set of managed fields entry %d: %w", i, err)
			}
		}
		m.fields[id] = fieldpath.NewVersionedSet(set, fieldpath.APIVersion(e.APIVersion), e.Operation == OperationApply)
		m.times[id] = e.Time
	}
	return m, nil
}

// managerID is the identifier of an entry's manager.
func managerID(e meta.ManagedFields) (string, error) {
	id := meta.ManagedFields{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource}
	if e.Operation == OperationApply {
		// An applier is the same manager whatever version it applies.
		id.APIVersion = ""
	}
	b, err := json.Marshal(id)
	if err != nil {
		return "", fmt.Errorf("encoding a manager identifier: %w", err)
	}
	return string(b), nil
}

// encode writes m as managedFields entries, sorted as Kubernetes sorts
// them: by operation, time, manager, apiVersion and subresource.
func (m *managed) encode() ([]meta.ManagedFields, error) {
	if len(m.fields) == 0 {
		return nil, nil
	}
	out := make([]meta.ManagedFields, 0, len(m.fields))
	for id, vs := range m.fields {
		var e meta.ManagedFields
		if err := json.Unmarshal([]byte(id), &e); err != nil {
			return nil, fmt.Errorf("decoding manager identifier %s: %w", id, err)
		}
		e.APIVersion = string(vs.APIVersion())
		if vs.Applied() {
			e.Operation = OperationApply
		}
		e.FieldsType = fieldsV1
		fields, err := vs.Set().ToJSON()
		if err != nil {
			return nil, fmt.Errorf("encoding the fields of %s: %w", id, err)
		}
		e.FieldsV1 = fields
		e.Time = m.times[id]
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		p, q := out[i], out[j]
		if p.Operation != q.Operation {
			return p.Operation < q.Operation
		}
		if ps, qs := unix(p.Time), unix(q.Time); ps != qs {
			return ps < qs
		}
		if p.Manager != q.Manager {
			return p.Manager < q.Manager
		}
		if p.APIVersion != q.APIVersion {
			return p.APIVersion < q.APIVersion
		}
		return p.Subresource < q.Subresource
	})
	return out, nil
}

func unix(t *meta.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

// isReset reports whether a client asks to clear managedFields: an empty
// (not absent) list, or one empty entry, as Kubernetes reads it.
func isReset(entries []meta.ManagedFields) bool {
	switch len(entries) {
	case 0:
		return entries != nil
	case 1:
		return reflect.DeepEqual(entries[0], meta.ManagedFields{})
	}
	return false
}
