package registry_test

import (
	"context"
	"fmt"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage/memory"
)

// Flunder is an API type: a struct with TypeMeta and ObjectMeta.
type Flunder struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            FlunderSpec `json:"spec,omitempty"`
}

type FlunderSpec struct {
	Color string `json:"color,omitempty"`
	Size  int    `json:"size,omitempty"`
}

// flunderStrategy defaults and validates Flunders.
type flunderStrategy struct {
	registry.DefaultStrategy[*Flunder]
}

// Default fills what a client may leave out, before admission.
func (flunderStrategy) Default(f *Flunder) {
	if f.Spec.Color == "" {
		f.Spec.Color = "blue"
	}
}

func (flunderStrategy) Validate(_ context.Context, f *Flunder) meta.FieldErrors {
	if f.Spec.Size < 0 {
		return meta.FieldErrors{meta.Invalid(meta.NewPath("spec", "size"), int64(f.Spec.Size), "must be greater than or equal to 0")}
	}
	return nil
}

func (s flunderStrategy) ValidateUpdate(ctx context.Context, f, _ *Flunder) meta.FieldErrors {
	return s.Validate(ctx, f)
}

// A Store keeps one resource with Kubernetes semantics: system metadata,
// the strategy's defaults and validation, optimistic concurrency, paged
// and watched lists. registry.Serve turns it into what a server installs.
func ExampleNewStore() {
	ctx := context.Background()
	mem := memory.New()
	defer mem.Close()
	flunders, err := registry.NewStore(registry.Options[*Flunder]{
		Resource:        meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"},
		Kind:            "Flunder",
		NamespaceScoped: true,
		StorageVersion:  "v1",
		Strategy:        flunderStrategy{},
		Storage:         mem,
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	created, _ := flunders.Create(ctx, "default", &Flunder{ObjectMeta: meta.ObjectMeta{Name: "a"}, Spec: FlunderSpec{Size: 1}}, registry.WriteOptions{})
	fmt.Println(created.Name, created.Spec.Color, "generation", created.Generation)

	_, err = flunders.Create(ctx, "default", &Flunder{ObjectMeta: meta.ObjectMeta{Name: "b"}, Spec: FlunderSpec{Size: -1}}, registry.WriteOptions{})
	fmt.Println(err)

	updated, _, _ := flunders.Update(ctx, "default", "a", func(_ context.Context, f *Flunder) (*Flunder, error) {
		f.Spec.Size = 2
		return f, nil
	}, registry.UpdateOptions{})
	fmt.Println(updated.Name, updated.Spec.Size, "generation", updated.Generation)

	// An update from a stale copy conflicts.
	_, _, err = flunders.Update(ctx, "default", "a", func(context.Context, *Flunder) (*Flunder, error) {
		return created, nil
	}, registry.UpdateOptions{})
	fmt.Println(meta.IsConflict(err))

	list, _ := flunders.List(ctx, "default", meta.ListOptions{})
	fmt.Println(len(list.Items), "flunder in default")
	// Output:
	// a blue generation 1
	// Flunder.wardle.example.com "b" is invalid: spec.size: Invalid value: -1: must be greater than or equal to 0
	// a 2 generation 2
	// true
	// 1 flunder in default
}
