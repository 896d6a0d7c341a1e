package fieldmanager

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"

	"github.com/apikit-dev/apikit/meta"
)

func TestDecodeManaged(t *testing.T) {
	ok := meta.ManagedFields{Manager: "m", Operation: "Update", APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: json.RawMessage(`{"f:spec":{}}`)}
	tests := []struct {
		name string
		edit func(*meta.ManagedFields)
		want string
	}{
		{"valid", func(*meta.ManagedFields) {}, ""},
		{"bad operation", func(e *meta.ManagedFields) { e.Operation = "Patch" }, "operation must be `Apply` or `Update`"},
		{"no apiVersion", func(e *meta.ManagedFields) { e.APIVersion = "" }, "apiVersion must not be empty"},
		{"no fieldsType", func(e *meta.ManagedFields) { e.FieldsType = "" }, "missing fieldsType in managed fields entry 0"},
		{"other fieldsType", func(e *meta.ManagedFields) { e.FieldsType = "FieldsV2" }, `invalid fieldsType "FieldsV2" in managed fields entry 0`},
		{"bad fields", func(e *meta.ManagedFields) { e.FieldsV1 = json.RawMessage(`{"k:nojson":{}}`) }, "error decoding set of managed fields entry 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := ok
			tt.edit(&e)
			_, err := decodeManaged([]meta.ManagedFields{e})
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestManagerID(t *testing.T) {
	apply, _ := managerID(meta.ManagedFields{Manager: "m", Operation: "Apply", APIVersion: "v1", Subresource: "status"})
	update, _ := managerID(meta.ManagedFields{Manager: "m", Operation: "Update", APIVersion: "v1"})
	// An applier is one manager whatever version it applies in.
	if apply != `{"manager":"m","operation":"Apply","subresource":"status"}` || update != `{"manager":"m","operation":"Update","apiVersion":"v1"}` {
		t.Errorf("ids %s and %s", apply, update)
	}
	if got := printManager(update); got != `"m" using v1` {
		t.Errorf("printManager(update) = %s", got)
	}
	if got := printManager(apply); got != `"m" with subresource "status"` {
		t.Errorf("printManager(apply) = %s", got)
	}
}

func TestIsReset(t *testing.T) {
	for _, tt := range []struct {
		entries []meta.ManagedFields
		want    bool
	}{
		{nil, false},
		{[]meta.ManagedFields{}, true},
		{[]meta.ManagedFields{{}}, true},
		{[]meta.ManagedFields{{Manager: "m"}}, false},
		{[]meta.ManagedFields{{}, {}}, false},
	} {
		if got := isReset(tt.entries); got != tt.want {
			t.Errorf("isReset(%#v) = %v", tt.entries, got)
		}
	}
}

// TestCapUpdateManagers: the oldest Update entries merge per apiVersion into
// ancient-changes until ten remain; Apply entries are never merged.
func TestCapUpdateManagers(t *testing.T) {
	m := &Manager{maxUpdateManagers: 3}
	mf := emptyManaged()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(name, op, version string, age int, field string) {
		id, _ := managerID(meta.ManagedFields{Manager: name, Operation: op, APIVersion: version})
		mf.fields[id] = fieldpath.NewVersionedSet(fieldpath.NewSet(fieldpath.MakePathOrDie("spec", field)), fieldpath.APIVersion(version), op == "Apply")
		ts := meta.NewTime(base.Add(time.Duration(age) * time.Minute))
		mf.times[id] = &ts
	}
	add("a", "Update", "v1", 1, "a")
	add("b", "Update", "v1", 2, "b")
	add("c", "Update", "v2", 3, "c")
	add("d", "Update", "v1", 4, "d")
	add("e", "Update", "v1", 5, "e")
	add("applier", "Apply", "v1", 0, "x")
	if err := m.capUpdateManagers(mf); err != nil {
		t.Fatal(err)
	}
	entries, err := mf.encode()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Manager+"/"+e.Operation+"/"+e.APIVersion+"="+string(e.FieldsV1))
	}
	// Oldest first: a opens v1's bucket, b joins it, c is v2's first,
	// d joins v1's bucket (which takes d's time): three updaters remain.
	want := []string{
		`applier/Apply/v1={"f:spec":{"f:x":{}}}`,
		`c/Update/v2={"f:spec":{"f:c":{}}}`,
		`ancient-changes/Update/v1={"f:spec":{"f:a":{},"f:b":{},"f:d":{}}}`,
		`e/Update/v1={"f:spec":{"f:e":{}}}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestConflictError(t *testing.T) {
	upd, _ := managerID(meta.ManagedFields{Manager: "ctl", Operation: "Update", APIVersion: "g/v1"})
	app, _ := managerID(meta.ManagedFields{Manager: "kubectl", Operation: "Apply"})
	err := conflictError(merge.Conflicts{
		{Manager: upd, Path: fieldpath.MakePathOrDie("spec", "a")},
		{Manager: app, Path: fieldpath.MakePathOrDie("spec", "b")},
	})
	want := "Apply failed with 2 conflicts: conflicts with \"ctl\" using g/v1:\n- .spec.a\nconflicts with \"kubectl\":\n- .spec.b"
	if err.ErrStatus.Code != 409 || err.ErrStatus.Reason != meta.StatusReasonConflict || err.ErrStatus.Message != want {
		t.Errorf("status %+v\nwant message %q", err.ErrStatus, want)
	}
	if c := err.ErrStatus.Details.Causes; len(c) != 2 || c[0] != (meta.StatusCause{Type: "FieldManagerConflict", Message: `conflict with "ctl" using g/v1`, Field: ".spec.a"}) {
		t.Errorf("causes %+v", c)
	}
}
