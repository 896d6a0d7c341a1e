package registry_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// The expectations are kubectl's AGE column, as
// k8s.io/apimachinery/pkg/util/duration.HumanDuration prints it.
func TestHumanDuration(t *testing.T) {
	const day = 24 * time.Hour
	const year = 365 * day
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-3 * time.Second, "<invalid>"},
		{-2 * time.Second, "<invalid>"},
		{-1500 * time.Millisecond, "0s"}, // clock skew of under two seconds is "now"
		{-time.Second, "0s"},
		{0, "0s"},
		{999 * time.Millisecond, "0s"},
		{time.Second, "1s"},
		{70 * time.Second, "70s"},
		{119 * time.Second, "119s"},
		{120 * time.Second, "2m"},
		{121 * time.Second, "2m1s"},
		{190 * time.Second, "3m10s"},
		{9*time.Minute + 59*time.Second, "9m59s"},
		{10 * time.Minute, "10m"},
		{10*time.Minute + 59*time.Second, "10m"},
		{70 * time.Minute, "70m"},
		{179 * time.Minute, "179m"},
		{180 * time.Minute, "3h"},
		{3*time.Hour + 30*time.Minute, "3h30m"},
		{7*time.Hour + 59*time.Minute, "7h59m"},
		{8 * time.Hour, "8h"},
		{47 * time.Hour, "47h"},
		{47*time.Hour + 59*time.Minute, "47h"},
		{48 * time.Hour, "2d"},
		{49 * time.Hour, "2d1h"},
		{7*day + 23*time.Hour, "7d23h"},
		{8*day + 2*time.Hour, "8d"},
		{367 * day, "367d"},
		{729 * day, "729d"},
		{2 * year, "2y"},
		{2*year + 25*time.Hour, "2y1d"},
		{7*year + 364*day, "7y364d"},
		{8*year + 2*time.Hour, "8y"},
		{100 * year, "100y"},
	} {
		if got := registry.HumanDuration(tc.d); got != tc.want {
			t.Errorf("HumanDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestTimestampSince(t *testing.T) {
	if got := registry.TimestampSince(meta.Time{}, testNow); got != "<unknown>" {
		t.Errorf("zero time: %q", got)
	}
	if got := registry.TimestampSince(meta.NewTime(testNow.Add(-90*time.Minute)), testNow); got != "90m" {
		t.Errorf("90 minutes ago: %q", got)
	}
}

func TestTable(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	a := widget("ns", "a", 3)
	a.Labels = map[string]string{"k": "v"}
	mustCreate(t, st, a)
	b := widget("ns", "b", 12)
	b.Spec.Color = "green"
	mustCreate(t, st, b)
	res := registry.Serve(st)
	list, err := res.List(ctx, "ns", meta.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	tbl, err := res.Table(ctx, list.Items, meta.TableOptions{IncludeObject: meta.IncludeNone})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.APIVersion != "meta.k8s.io/v1" || tbl.Kind != "Table" {
		t.Errorf("table is %s %s", tbl.APIVersion, tbl.Kind)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name+":"+c.Type+":"+c.Format)
	}
	if want := []string{"Name:string:name", "Size:integer:", "Age:string:", "Color:string:"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	if tbl.ColumnDefinitions[3].Priority != 1 || tbl.ColumnDefinitions[3].Description != "Its color." {
		t.Errorf("color column %+v", tbl.ColumnDefinitions[3])
	}
	if len(tbl.Rows) != 2 {
		t.Fatalf("%d rows", len(tbl.Rows))
	}
	// The store's clock made both objects "now".
	for i, want := range [][]any{{"a", int64(3), "0s", "blue"}, {"b", int64(12), "0s", "green"}} {
		if !slices.Equal(tbl.Rows[i].Cells, want) {
			t.Errorf("row %d cells %v, want %v", i, tbl.Rows[i].Cells, want)
		}
		if tbl.Rows[i].Object != nil {
			t.Errorf("row %d has an object with includeObject=None", i)
		}
	}
	raw, _ := json.Marshal(tbl.Rows[0])
	if string(raw) != `{"cells":["a",3,"0s","blue"],"object":null}` {
		t.Errorf("row JSON %s", raw)
	}

	for _, tc := range []struct {
		policy meta.IncludeObjectPolicy
		check  func(t *testing.T, obj map[string]any)
	}{
		{meta.IncludeMetadata, func(t *testing.T, obj map[string]any) {
			if obj["apiVersion"] != "meta.k8s.io/v1" || obj["kind"] != "PartialObjectMetadata" {
				t.Errorf("metadata row object is %v %v", obj["apiVersion"], obj["kind"])
			}
			md := obj["metadata"].(map[string]any)
			if md["name"] != "a" || md["uid"] == "" || md["labels"].(map[string]any)["k"] != "v" {
				t.Errorf("metadata %v", md)
			}
			if _, ok := obj["spec"]; ok {
				t.Error("metadata row object has a spec")
			}
		}},
		{meta.IncludeObject, func(t *testing.T, obj map[string]any) {
			if obj["apiVersion"] != "example.com/v1" || obj["kind"] != "Widget" {
				t.Errorf("object row is %v %v", obj["apiVersion"], obj["kind"])
			}
			if obj["spec"].(map[string]any)["size"] != 3.0 {
				t.Errorf("object row spec %v", obj["spec"])
			}
		}},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			tbl, err := res.Table(ctx, list.Items, meta.TableOptions{IncludeObject: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(tbl.Rows[0].Object, &obj); err != nil {
				t.Fatal(err)
			}
			tc.check(t, obj)
		})
	}
}

func TestDeleteCollection(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	seedSelectable(t, st)
	fin := widget("a", "held", 1)
	fin.Labels = map[string]string{"tier": "front"}
	fin.Finalizers = []string{"example.com/f"}
	mustCreate(t, st, fin)
	res := registry.Serve(st)

	dry, err := res.DeleteCollection(ctx, "", meta.ListOptions{LabelSelector: "tier=front"}, registry.DeleteOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Items) != 3 {
		t.Errorf("dry run answered %d items, want 3", len(dry.Items))
	}
	if all, _ := st.List(ctx, "", meta.ListOptions{}); len(all.Items) != 6 {
		t.Fatalf("dry run deleted: %v", names(all))
	}

	out, err := res.DeleteCollection(ctx, "a", meta.ListOptions{LabelSelector: "tier=front", Limit: 1}, registry.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range out.Items {
		got = append(got, object(t, it).GetObjectMeta().Name)
	}
	if !slices.Equal(got, []string{"held", "w1"}) {
		t.Errorf("deleted %v, want held and w1 (limit is ignored)", got)
	}
	left, _ := st.List(ctx, "", meta.ListOptions{})
	if want := []string{"a/held", "a/w2", "a/w3", "b/w1", "b/w4"}; !slices.Equal(names(left), want) {
		t.Errorf("left %v, want %v", names(left), want)
	}
	held, _, _ := st.Get(ctx, "a", "held", meta.GetOptions{})
	if held.DeletionTimestamp == nil {
		t.Error("the object with a finalizer was not marked for deletion")
	}
}

// A store with NoAgeColumn shows its columns after NAME and nothing else,
// as a CustomResourceDefinition's printer columns are shown.
func TestTableNoAgeColumn(t *testing.T) {
	st, _ := newWidgets(t, func(o *registry.Options[*Widget]) { o.NoAgeColumn = true })
	tbl, cols := tableOfOne(t, st)
	if want := []string{"Name", "Size", "Color"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	if want := []any{"a", int64(3), "blue"}; !slices.Equal(tbl.Rows[0].Cells, want) {
		t.Errorf("cells %v, want %v", tbl.Rows[0].Cells, want)
	}
}

// TestTableAgeBeforeWideColumns: Age goes after the last column kubectl
// shows without -o wide, as kube-apiserver's printers place it (a
// RoleBinding's NAME ROLE AGE, then USERS GROUPS SERVICEACCOUNTS).
func TestTableAgeBeforeWideColumns(t *testing.T) {
	st, _ := newWidgets(t, func(o *registry.Options[*Widget]) {
		o.Columns = []registry.Column[*Widget]{
			{Name: "Size", Type: "integer", Value: func(w *Widget) any { return int64(w.Spec.Size) }},
			{Name: "Wide", Type: "string", Priority: 1, Value: func(*Widget) any { return "w" }},
		}
	})
	tbl, cols := tableOfOne(t, st)
	if want := []string{"Name", "Size", "Age", "Wide"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	if cells := tbl.Rows[0].Cells; len(cells) != 4 || cells[1] != int64(3) || cells[3] != "w" {
		t.Errorf("cells %v, want a, 3, the age, w", cells)
	}
}

// tableOfOne creates widget ns/a of size 3 in st and returns the Table of
// the namespace's list, without objects, and its column names.
func tableOfOne(t *testing.T, st *registry.Store[*Widget]) (*meta.Table, []string) {
	t.Helper()
	mustCreate(t, st, widget("ns", "a", 3))
	res := registry.Serve(st)
	list, err := res.List(context.Background(), "ns", meta.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := res.Table(context.Background(), list.Items, meta.TableOptions{IncludeObject: meta.IncludeNone})
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	return tbl, cols
}
