package fieldmanager

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
)

// TestScaleUpdate checks the managedFields of an object written through
// its scale subresource against kube-apiserver's scale handler: the
// writer's entry (subresource scale, no time) takes the replicas from the
// entries owning them when the write changes them.
func TestScaleUpdate(t *testing.T) {
	at := meta.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	entry := func(manager, op, sub, fields string) meta.ManagedFields {
		return meta.ManagedFields{Manager: manager, Operation: op, APIVersion: "example.com/v1", Time: &at, FieldsType: "FieldsV1",
			FieldsV1: json.RawMessage(fields), Subresource: sub}
	}
	const (
		applied  = `{"f:spec":{".":{},"f:color":{},"f:replicas":{}}}`
		rest     = `{"f:spec":{".":{},"f:color":{}}}`
		replicas = `{"f:spec":{"f:replicas":{}}}`
		status   = `{"f:status":{".":{},"f:replicas":{}}}`
	)
	scaled := meta.ManagedFields{Manager: "kubectl", Operation: "Update", APIVersion: "example.com/v1", FieldsType: "FieldsV1",
		FieldsV1: json.RawMessage(replicas), Subresource: "scale"}
	for _, tc := range []struct {
		name    string
		entries []meta.ManagedFields
		changed bool
		want    []meta.ManagedFields
	}{
		{name: "the writer takes the replicas", changed: true,
			entries: []meta.ManagedFields{entry("kubectl-client-side-apply", "Update", "", applied), entry("ctl", "Update", "status", status)},
			// Sorted as kube-apiserver sorts them: by operation, time
			// (none first), manager.
			want: []meta.ManagedFields{scaled, entry("ctl", "Update", "status", status), entry("kubectl-client-side-apply", "Update", "", rest)}},
		{name: "an entry left empty goes", changed: true,
			entries: []meta.ManagedFields{entry("ctl", "Update", "", replicas)},
			want:    []meta.ManagedFields{scaled}},
		{name: "from an applier", changed: true,
			entries: []meta.ManagedFields{entry("ctl", "Apply", "", applied)},
			want:    []meta.ManagedFields{entry("ctl", "Apply", "", rest), scaled}},
		{name: "scaled again", changed: true,
			entries: []meta.ManagedFields{{Manager: "kubectl", Operation: "Update", APIVersion: "example.com/v1", FieldsType: "FieldsV1", Time: &at,
				FieldsV1: json.RawMessage(replicas), Subresource: "scale"}},
			want: []meta.ManagedFields{scaled}},
		{name: "nobody owned the replicas", changed: true,
			entries: []meta.ManagedFields{entry("ctl", "Update", "status", status)},
			want:    []meta.ManagedFields{scaled, entry("ctl", "Update", "status", status)}},
		{name: "none before", changed: true, want: []meta.ManagedFields{scaled}},
		{name: "unchanged, no owner", changed: false,
			entries: []meta.ManagedFields{entry("ctl", "Update", "status", status)},
			want:    []meta.ManagedFields{entry("ctl", "Update", "status", status)}},
		// An applier keeps its entry as it was.
		{name: "unchanged, an applier", changed: false,
			entries: []meta.ManagedFields{entry("ctl", "Apply", "", applied)},
			want:    []meta.ManagedFields{entry("ctl", "Apply", "", applied)}},
		// An updater's entry is split: kube-apiserver keys the Scale's
		// managers by the Scale's apiVersion, so the object's entry is
		// not found among them.
		{name: "unchanged, an updater", changed: false,
			entries: []meta.ManagedFields{entry("kubectl-client-side-apply", "Update", "", applied)},
			want: []meta.ManagedFields{{Manager: "kubectl-client-side-apply", Operation: "Update", APIVersion: "example.com/v1", FieldsType: "FieldsV1",
				FieldsV1: json.RawMessage(replicas)}, entry("kubectl-client-side-apply", "Update", "", rest)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScaleUpdate(tc.entries, []string{"spec", "replicas"}, "example.com/v1", "kubectl", tc.changed)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Errorf("managedFields\n%s\nwant\n%s", g, w)
			}
		})
	}
	if _, err := ScaleUpdate([]meta.ManagedFields{{Manager: "m", Operation: "Patch"}}, []string{"spec", "replicas"}, "example.com/v1", "kubectl", true); err == nil {
		t.Error("entries kube-apiserver refuses were taken")
	}
}
