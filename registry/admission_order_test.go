package registry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// orderStrategy logs each step of a write with what it sees.
type orderStrategy struct {
	log *[]string
}

func (s orderStrategy) add(format string, args ...any) {
	*s.log = append(*s.log, fmt.Sprintf(format, args...))
}

func (s orderStrategy) Default(w *Widget) {
	s.add("default")
	if w.Spec.Color == "" {
		w.Spec.Color = "blue"
	}
}

func (s orderStrategy) PrepareForCreate(_ context.Context, w *Widget) {
	s.add("prepare tags=%v", w.Spec.Tags)
}

func (s orderStrategy) PrepareForUpdate(_ context.Context, w, _ *Widget) {
	s.add("prepare tags=%v", w.Spec.Tags)
}

func (s orderStrategy) Validate(context.Context, *Widget) meta.FieldErrors {
	s.add("validate")
	return nil
}

func (s orderStrategy) ValidateUpdate(context.Context, *Widget, *Widget) meta.FieldErrors {
	s.add("validate")
	return nil
}

// TestAdmissionOrder: a write runs kube-apiserver's steps in its order:
// defaults, mutating admission (which sees them), PrepareForCreate/Update
// (which sees admission's changes), validation, validating admission, and
// only then storage.
func TestAdmissionOrder(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	defer mem.Close()
	var log []string
	strategy := orderStrategy{log: &log}
	store, err := registry.NewStore(registry.Options[*Widget]{
		Resource: meta.GroupResource{Group: "example.com", Resource: "widgets"}, Kind: "Widget",
		NamespaceScoped: true, StorageVersion: "v1", Strategy: strategy, Storage: mem,
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := func() string {
		kv, err := mem.Get(ctx, "/example.com/widgets/ns/w", storage.GetOptions{})
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return "none"
		case err != nil:
			return err.Error()
		}
		return fmt.Sprint(kv.Revision)
	}
	opts := registry.WriteOptions{
		Admit: func(_ context.Context, obj, _ meta.Object) error {
			w := obj.(*Widget)
			strategy.add("mutating admission color=%s", w.Spec.Color)
			w.Spec.Tags = append(w.Spec.Tags, "admitted")
			return nil
		},
		Validate: func(context.Context, meta.Object, meta.Object) error {
			strategy.add("validating admission stored=%s", stored())
			return nil
		},
	}

	if _, err := store.Create(ctx, "ns", &Widget{ObjectMeta: meta.ObjectMeta{Name: "w"}}, opts); err != nil {
		t.Fatal(err)
	}
	want := []string{"default", "mutating admission color=blue", "prepare tags=[admitted]", "validate", "validating admission stored=none"}
	if !slices.Equal(log, want) {
		t.Errorf("create ran\n  %s\nwant\n  %s", strings.Join(log, "\n  "), strings.Join(want, "\n  "))
	}
	rev := stored()

	log = nil
	_, _, err = store.Update(ctx, "ns", "w", func(_ context.Context, w *Widget) (*Widget, error) {
		w.Spec.Color, w.Spec.Tags = "", nil
		return w, nil
	}, registry.UpdateOptions{WriteOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"default", "mutating admission color=blue", "prepare tags=[admitted]", "validate", "validating admission stored=" + rev}
	if !slices.Equal(log, want) {
		t.Errorf("update ran\n  %s\nwant\n  %s", strings.Join(log, "\n  "), strings.Join(want, "\n  "))
	}
}
