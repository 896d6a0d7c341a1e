package registry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Widget is the test resource: namespaced, with a spec and a status.
type Widget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Size  int               `json:"size,omitempty"`
	Color string            `json:"color,omitempty"`
	Tags  []string          `json:"tags,omitempty"`
	Extra map[string]string `json:"extra,omitempty"`
	Since *meta.Time        `json:"since,omitempty"`
}

type WidgetStatus struct {
	Ready              bool  `json:"ready,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Gadget is a cluster-scoped resource without a status.
type Gadget struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`

	Parts []string `json:"parts,omitempty"`
}

// widgetStrategy defaults the color and checks sizes, as a real strategy
// would, and records what it was called with.
type widgetStrategy struct {
	registry.DefaultStrategy[*Widget]
}

func (widgetStrategy) PrepareForCreate(_ context.Context, w *Widget) {
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
}

func (widgetStrategy) PrepareForUpdate(_ context.Context, w, _ *Widget) {
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
}

func validateWidget(w *Widget) meta.FieldErrors {
	var errs meta.FieldErrors
	if w.Spec.Size < 0 {
		errs = append(errs, meta.Invalid(meta.NewPath("spec", "size"), int64(w.Spec.Size), "must be greater than or equal to 0"))
	}
	if w.Spec.Color == "red" && w.Spec.Size > 10 {
		errs = append(errs, meta.Forbidden(meta.NewPath("spec", "color"), "big widgets may not be red"))
	}
	return errs
}

func (widgetStrategy) Validate(_ context.Context, w *Widget) meta.FieldErrors {
	return validateWidget(w)
}

func (widgetStrategy) ValidateUpdate(_ context.Context, w, _ *Widget) meta.FieldErrors {
	return validateWidget(w)
}

func (widgetStrategy) ValidateStatusUpdate(_ context.Context, w, _ *Widget) meta.FieldErrors {
	if w.Status.ObservedGeneration < 0 {
		return meta.FieldErrors{meta.Invalid(meta.NewPath("status", "observedGeneration"), w.Status.ObservedGeneration, "must be greater than or equal to 0")}
	}
	return nil
}

var testNow = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

func newMemory(t testing.TB) *memory.Store {
	t.Helper()
	s := memory.New(memory.WithMaxRevisionWait(50*time.Millisecond), memory.WithBookmarkInterval(20*time.Millisecond),
		memory.WithCompactionInterval(0))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func widgetOptions(s storage.Interface) registry.Options[*Widget] {
	return registry.Options[*Widget]{
		Resource:          meta.GroupResource{Group: "example.com", Resource: "widgets"},
		Kind:              "Widget",
		NamespaceScoped:   true,
		StorageVersion:    "v1",
		Strategy:          widgetStrategy{},
		Storage:           s,
		StatusSubresource: true,
		Fields:            func(w *Widget) meta.Set { return meta.Set{"spec.color": w.Spec.Color} },
		Columns: []registry.Column[*Widget]{
			{Name: "Size", Type: "integer", Description: "How big.", Value: func(w *Widget) any { return int64(w.Spec.Size) }},
			{Name: "Color", Type: "string", Description: "Its color.", Priority: 1, Value: func(w *Widget) any { return w.Spec.Color }},
		},
		Now: func() time.Time { return testNow },
	}
}

func newWidgets(t testing.TB, mutate ...func(*registry.Options[*Widget])) (*registry.Store[*Widget], *memory.Store) {
	t.Helper()
	mem := newMemory(t)
	opts := widgetOptions(mem)
	for _, m := range mutate {
		m(&opts)
	}
	st, err := registry.NewStore(opts)
	if err != nil {
		t.Fatal(err)
	}
	return st, mem
}

func newGadgets(t testing.TB) *registry.Store[*Gadget] {
	t.Helper()
	st, err := registry.NewStore(registry.Options[*Gadget]{
		Resource:       meta.GroupResource{Group: "example.com", Resource: "gadgets"},
		Kind:           "Gadget",
		StorageVersion: "v1",
		Strategy:       registry.DefaultStrategy[*Gadget]{},
		Storage:        newMemory(t),
		Now:            func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func widget(ns, name string, size int) *Widget {
	return &Widget{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: name}, Spec: WidgetSpec{Size: size}}
}

// mustCreate creates w and returns the stored object.
func mustCreate(t testing.TB, st *registry.Store[*Widget], w *Widget) *Widget {
	t.Helper()
	out, err := st.Create(context.Background(), w.Namespace, w, registry.WriteOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", w.Name, err)
	}
	return out
}

// replace returns an UpdateFunc that answers obj whatever the current object.
func replace(obj *Widget) registry.UpdateFunc[*Widget] {
	return func(context.Context, *Widget) (*Widget, error) { return obj, nil }
}

// edit returns an UpdateFunc that changes the current object with fn.
func edit(fn func(*Widget)) registry.UpdateFunc[*Widget] {
	return func(_ context.Context, cur *Widget) (*Widget, error) {
		fn(cur)
		return cur, nil
	}
}

// wantStatus checks that err is a StatusError with the code, reason and
// message given, and returns its Status.
func wantStatus(t testing.TB, err error, code int32, reason meta.StatusReason, message string) meta.Status {
	t.Helper()
	var se *meta.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a StatusError; want %d %s %q", err, err, code, reason, message)
	}
	st := se.ErrStatus
	if st.Code != code || st.Reason != reason || st.Message != message {
		t.Fatalf("status = %d %s %q\nwant     %d %s %q", st.Code, st.Reason, st.Message, code, reason, message)
	}
	return st
}

// admissionRecorder records what admission was called with.
type admissionRecorder struct {
	mu    sync.Mutex
	calls []string
	objs  []meta.Object
	olds  []meta.Object
}

func (a *admissionRecorder) record(call string, obj, old meta.Object) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, call)
	a.objs = append(a.objs, obj)
	a.olds = append(a.olds, old)
}

// object returns an item's object, failing the test if it cannot be decoded.
func object(t testing.TB, it registry.Item) meta.Object {
	t.Helper()
	obj, err := it.Object()
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
