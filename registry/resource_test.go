package registry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// WidgetV2 is another served version of Widget: it calls size "diameter"
// and keeps the color in an annotation-free nested struct.
type WidgetV2 struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            struct {
		Diameter int `json:"diameter,omitempty"`
		Paint    struct {
			Color string `json:"color,omitempty"`
		} `json:"paint,omitempty"`
	} `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

var widgetV2 = registry.Conversion[*Widget, *WidgetV2]{
	ToStorage: func(in *WidgetV2) (*Widget, error) {
		out := &Widget{ObjectMeta: in.ObjectMeta, Status: in.Status}
		out.Spec.Size, out.Spec.Color = in.Spec.Diameter, in.Spec.Paint.Color
		return out, nil
	},
	FromStorage: func(in *Widget) (*WidgetV2, error) {
		out := &WidgetV2{ObjectMeta: in.ObjectMeta, Status: in.Status}
		out.Spec.Diameter, out.Spec.Paint.Color = in.Spec.Size, in.Spec.Color
		return out, nil
	},
}

func TestServeVersion(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	v2, err := registry.ServeVersion(st, "v2", widgetV2)
	if err != nil {
		t.Fatal(err)
	}
	v1 := registry.Serve(st)
	info := v2.Info()
	if info.GroupVersion != (meta.GroupVersion{Group: "example.com", Version: "v2"}) || info.Resource != "widgets" || info.Kind != "Widget" ||
		info.SingularName != "widget" || !info.NamespaceScoped || !info.StatusSubresource {
		t.Errorf("info %+v", info)
	}
	if _, ok := v2.New().(*WidgetV2); !ok {
		t.Errorf("New() is %T", v2.New())
	}
	if _, ok := v1.New().(*Widget); !ok {
		t.Errorf("New() is %T", v1.New())
	}

	in := &WidgetV2{ObjectMeta: meta.ObjectMeta{Name: "w", Labels: map[string]string{"a": "b"}}}
	in.Spec.Diameter = 4
	created, err := v2.Create(ctx, "ns", in, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := object(t, created).(*WidgetV2)
	if c.APIVersion != "example.com/v2" || c.Kind != "Widget" || c.Spec.Diameter != 4 || c.Spec.Paint.Color != "blue" || c.UID == "" {
		t.Errorf("created %+v", c)
	}
	stored, _, err := st.Get(ctx, "ns", "w", meta.GetOptions{})
	if err != nil || stored.Spec.Size != 4 || stored.Spec.Color != "blue" || stored.APIVersion != "example.com/v1" {
		t.Fatalf("stored %+v %v", stored, err)
	}

	// Reads in each version, twice (the second from the memo), give each
	// version's object and JSON.
	for range 2 {
		g2, err := v2.Get(ctx, "ns", "w", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g1, err := v1.Get(ctx, "ns", "w", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if o := object(t, g2).(*WidgetV2); o.APIVersion != "example.com/v2" || o.Spec.Diameter != 4 || o.ResourceVersion != c.ResourceVersion {
			t.Errorf("v2 get %+v", o)
		}
		j2, _ := g2.JSON()
		j1, _ := g1.JSON()
		if !strings.Contains(string(j2), `"apiVersion":"example.com/v2"`) || !strings.Contains(string(j2), `"diameter":4`) ||
			!strings.Contains(string(j1), `"apiVersion":"example.com/v1"`) || !strings.Contains(string(j1), `"size":4`) {
			t.Errorf("JSON v2 %s\nv1 %s", j2, j1)
		}
	}

	list, err := v2.List(ctx, "ns", meta.ListOptions{})
	if err != nil || len(list.Items) != 1 || object(t, list.Items[0]).(*WidgetV2).Spec.Diameter != 4 || list.ResourceVersion == "" {
		t.Errorf("v2 list %+v %v", list, err)
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := v2.Watch(wctx, "ns", meta.ListOptions{ResourceVersion: c.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}

	up, created2, err := v2.Update(ctx, "ns", "w", func(_ context.Context, cur meta.Object) (meta.Object, error) {
		w := cur.(*WidgetV2)
		w.Spec.Paint.Color = "green"
		return w, nil
	}, registry.UpdateOptions{})
	if err != nil || created2 {
		t.Fatal(err, created2)
	}
	if u := object(t, up).(*WidgetV2); u.Spec.Paint.Color != "green" || u.Spec.Diameter != 4 || u.Generation != 2 || u.APIVersion != "example.com/v2" {
		t.Errorf("v2 update %+v", u)
	}
	select {
	case ev := <-events:
		if o, ok := object(t, ev.Item).(*WidgetV2); ev.Type != meta.Modified || !ok || o.Spec.Paint.Color != "green" {
			t.Errorf("v2 watch %s %+v", ev.Type, object(t, ev.Item))
		}
		raw, _ := ev.Item.JSON()
		if !strings.Contains(string(raw), `"apiVersion":"example.com/v2"`) {
			t.Errorf("v2 watch JSON %s", raw)
		}
	case <-time.After(eventWait):
		t.Error("no watch event in time")
	}

	deleted, gone, err := v2.Delete(ctx, "ns", "w", registry.DeleteOptions{})
	if err != nil || !gone || object(t, deleted).(*WidgetV2).Spec.Diameter != 4 {
		t.Errorf("v2 delete %+v %v %v", object(t, deleted), gone, err)
	}

	// A served object of the wrong type is an internal error, not a panic.
	if _, err := v2.Create(ctx, "ns", widget("ns", "x", 1), registry.WriteOptions{}); meta.StatusOf(err).Code != 500 {
		t.Errorf("create with a storage-version object: %v", err)
	}
	if _, err := registry.ServeVersion(st, "v3", registry.Conversion[*Widget, *WidgetV2]{}); err == nil {
		t.Error("ServeVersion without conversion functions")
	}
}

func TestNewStoreChecksOptions(t *testing.T) {
	mem := newMemory(t)
	base := widgetOptions(mem)
	for _, tc := range []struct {
		name   string
		mutate func(*registry.Options[*Widget])
	}{
		{"no resource", func(o *registry.Options[*Widget]) { o.Resource.Resource = "" }},
		{"no kind", func(o *registry.Options[*Widget]) { o.Kind = "" }},
		{"no storage version", func(o *registry.Options[*Widget]) { o.StorageVersion = "" }},
		{"no strategy", func(o *registry.Options[*Widget]) { o.Strategy = nil }},
		{"no storage", func(o *registry.Options[*Widget]) { o.Storage = nil }},
	} {
		o := base
		tc.mutate(&o)
		if _, err := registry.NewStore(o); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	type noStatus struct {
		meta.TypeMeta   `json:",inline"`
		meta.ObjectMeta `json:"metadata"`
	}
	_, err := registry.NewStore(registry.Options[*noStatus]{Resource: meta.GroupResource{Resource: "x"}, Kind: "X", StorageVersion: "v1",
		Strategy: registry.DefaultStrategy[*noStatus]{}, Storage: mem, StatusSubresource: true})
	if err == nil {
		t.Error("a status subresource without a status field")
	}
	st, err := registry.NewStore(base)
	if err != nil {
		t.Fatal(err)
	}
	if st.Resource() != (meta.GroupResource{Group: "example.com", Resource: "widgets"}) || st.GroupKind() != (meta.GroupKind{Group: "example.com", Kind: "Widget"}) || !st.NamespaceScoped() {
		t.Errorf("accessors %v %v %v", st.Resource(), st.GroupKind(), st.NamespaceScoped())
	}
	defer func() {
		if recover() == nil {
			t.Error("MustNewStore did not panic on bad options")
		}
	}()
	registry.MustNewStore(registry.Options[*Widget]{})
}

func TestObjectMetaValidation(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(*Widget)
		field  string
		msg    string
	}{
		{"owner reference without fields", func(w *Widget) { w.OwnerReferences = []meta.OwnerReference{{}} },
			"metadata.ownerReferences[0].apiVersion", `metadata.ownerReferences[0].apiVersion: Invalid value: "": version must not be empty`},
		{"bad annotation key", func(w *Widget) { w.Annotations = map[string]string{"a b": "x"} }, "metadata.annotations", ""},
		{"annotations too large", func(w *Widget) { w.Annotations = map[string]string{"big": strings.Repeat("x", 256*1024)} },
			"metadata.annotations", "metadata.annotations: Too long: may not be more than 262144 bytes"},
		{"bad finalizer", func(w *Widget) { w.Finalizers = []string{"no spaces allowed"} }, "metadata.finalizers[0]", ""},
		{"bad label key", func(w *Widget) { w.Labels = map[string]string{"-x": "y"} }, "metadata.labels", ""},
		{"bad generateName", func(w *Widget) { w.Name, w.GenerateName = "", "UP-" }, "metadata.generateName", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := widget("ns", "w", 1)
			tc.change(w)
			_, err := st.Create(ctx, "ns", w, registry.WriteOptions{})
			s := meta.StatusOf(err)
			if s.Code != 422 || !hasCauseField(s, tc.field) {
				t.Fatalf("%v, want 422 naming %s", err, tc.field)
			}
			if tc.msg != "" && !strings.Contains(s.Message, tc.msg) {
				t.Errorf("message %q lacks %q", s.Message, tc.msg)
			}
		})
	}
	// A generateName may end in "-"; the name made from it is checked too.
	w := widget("ns", "", 1)
	w.GenerateName = "ok-"
	if _, err := st.Create(ctx, "ns", w, registry.WriteOptions{}); err != nil {
		t.Errorf("generateName ok-: %v", err)
	}
	// Namespace names are DNS labels.
	_, err := st.Create(ctx, "bad.ns", widget("bad.ns", "w", 1), registry.WriteOptions{})
	if s := meta.StatusOf(err); s.Code != 422 || !hasCauseField(s, "metadata.namespace") {
		t.Errorf("namespace with a dot: %v", err)
	}
	if got := registry.ValidateDNSLabelName("a-", true); got != nil {
		t.Errorf("label prefix a-: %v", got)
	}
	if got := registry.ValidateDNSLabelName("a.b", false); got == nil {
		t.Error("a.b is a DNS label")
	}
}

// TestTwoGroupsOverOneStorage serves one storage through two stores of
// different groups, as core/v1 and events.k8s.io/v1 serve events: both
// share each value's memo, and neither may be given what the other derived
// (the same version string "v1" in both groups).
func TestTwoGroupsOverOneStorage(t *testing.T) {
	ctx := context.Background()
	first, mem := newWidgets(t)
	opts := widgetOptions(mem)
	opts.Resource.Group = "other.example.com"
	opts.StorageAPIVersion = "example.com/v1"
	opts.KeyRoot = storage.KeyRoot(first.Resource())
	second, err := registry.NewStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]registry.Resource{"example.com/v1": registry.Serve(first)}
	if served["other.example.com/v1"], err = registry.ServeVersion(second, "v1", widgetV2); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, first, widget("ns", "w", 3))
	for _, order := range [][]string{{"example.com/v1", "other.example.com/v1"}, {"other.example.com/v1", "example.com/v1"}} {
		// A write gives the value a new memo; the reads in this order
		// fill it.
		if _, _, err := first.Update(ctx, "ns", "w", func(_ context.Context, w *Widget) (*Widget, error) {
			w.Spec.Size++
			return w, nil
		}, registry.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			for _, apiVersion := range order {
				it, err := served[apiVersion].Get(ctx, "ns", "w", meta.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := object(t, it).GetTypeMeta().APIVersion; got != apiVersion {
					t.Errorf("order %v: object read as %s has apiVersion %s", order, apiVersion, got)
				}
				raw, err := it.JSON()
				if err != nil {
					t.Fatal(err)
				}
				field := `"size":`
				if apiVersion == "other.example.com/v1" {
					field = `"diameter":`
				}
				if !strings.Contains(string(raw), `"apiVersion":"`+apiVersion+`"`) || !strings.Contains(string(raw), field) {
					t.Errorf("order %v: JSON read as %s is %s", order, apiVersion, raw)
				}
			}
		}
	}
}
