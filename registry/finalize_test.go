package registry_test

import (
	"context"
	"sync"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// racingStorage runs a write of another client once, just before the first
// GuaranteedUpdate or Delete the store under test sends, so that a race
// that is rare in practice happens every time.
type racingStorage struct {
	storage.Interface
	mu           sync.Mutex
	beforeUpdate func()
	beforeDelete func()
}

func (r *racingStorage) take(f *func()) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	hook := *f
	*f = nil
	return hook
}

func (r *racingStorage) GuaranteedUpdate(ctx context.Context, key string, opts storage.UpdateOptions, fn storage.UpdateFunc) (storage.KeyValue, error) {
	if hook := r.take(&r.beforeUpdate); hook != nil {
		hook()
	}
	return r.Interface.GuaranteedUpdate(ctx, key, opts, fn)
}

func (r *racingStorage) Delete(ctx context.Context, key string, opts storage.DeleteOptions) (storage.KeyValue, error) {
	if hook := r.take(&r.beforeDelete); hook != nil {
		hook()
	}
	return r.Interface.Delete(ctx, key, opts)
}

// TestFinalizerRaces: a delete and the removal of the last finalizer, or two
// removals, racing each other end as kube-apiserver ends them: the object is
// gone and every client gets a success.
func TestFinalizerRaces(t *testing.T) {
	removeFinalizers := edit(func(w *Widget) { w.Finalizers = nil })
	for _, tc := range []struct {
		name string
		// marked: the object is marked for deletion before the race.
		marked bool
		// arm sets the other client's write on racing, done through other.
		arm func(t *testing.T, racing *racingStorage, other *registry.Store[*Widget])
		// act is the request under test.
		act func(st *registry.Store[*Widget]) (*Widget, error)
		// recreated: the other client made a namesake, which must survive.
		recreated bool
	}{
		{
			// The delete read the object with its finalizer; the finalizer
			// is removed before the delete marks it. Marking it then would
			// leave it terminating forever.
			name: "delete racing the removal of the last finalizer",
			arm: func(t *testing.T, racing *racingStorage, other *registry.Store[*Widget]) {
				racing.beforeUpdate = func() {
					if _, _, err := other.Update(context.Background(), "ns", "w", removeFinalizers, registry.UpdateOptions{}); err != nil {
						t.Errorf("other client's update: %v", err)
					}
				}
			},
			act: func(st *registry.Store[*Widget]) (*Widget, error) {
				out, _, err := st.Delete(context.Background(), "ns", "w", registry.DeleteOptions{})
				return out, err
			},
		},
		{
			// Both updates removed the last finalizer; the other one
			// deleted the object first.
			name: "two clients removing the last finalizer", marked: true,
			arm: func(t *testing.T, racing *racingStorage, other *registry.Store[*Widget]) {
				racing.beforeDelete = func() {
					if _, _, err := other.Update(context.Background(), "ns", "w", removeFinalizers, registry.UpdateOptions{}); err != nil {
						t.Errorf("other client's update: %v", err)
					}
				}
			},
			act: func(st *registry.Store[*Widget]) (*Widget, error) {
				out, _, err := st.Update(context.Background(), "ns", "w", removeFinalizers, registry.UpdateOptions{})
				return out, err
			},
		},
		{
			// A write that does not touch the finalizers lands between the
			// update that removed the last one and the delete it causes:
			// the delete still happens, with no conflict.
			name: "unrelated write before the delete an update causes", marked: true,
			arm: func(t *testing.T, racing *racingStorage, other *registry.Store[*Widget]) {
				racing.beforeDelete = func() {
					if _, _, err := other.Update(context.Background(), "ns", "w", edit(func(w *Widget) { w.Status.Ready = true }),
						registry.UpdateOptions{Subresource: "status"}); err != nil {
						t.Errorf("other client's status update: %v", err)
					}
				}
			},
			act: func(st *registry.Store[*Widget]) (*Widget, error) {
				out, _, err := st.Update(context.Background(), "ns", "w", removeFinalizers, registry.UpdateOptions{})
				return out, err
			},
		},
		{
			// The object is deleted and made again under the same name
			// between the update that removed the last finalizer and the
			// delete it causes: the new object is not deleted.
			name: "a namesake made before the delete an update causes", marked: true, recreated: true,
			arm: func(t *testing.T, racing *racingStorage, other *registry.Store[*Widget]) {
				racing.beforeDelete = func() {
					ctx := context.Background()
					if _, _, err := other.Update(ctx, "ns", "w", removeFinalizers, registry.UpdateOptions{}); err != nil {
						t.Errorf("other client's update: %v", err)
					}
					if _, err := other.Create(ctx, "ns", widget("ns", "w", 2), registry.WriteOptions{}); err != nil {
						t.Errorf("other client's create: %v", err)
					}
				}
			},
			act: func(st *registry.Store[*Widget]) (*Widget, error) {
				out, _, err := st.Update(context.Background(), "ns", "w", removeFinalizers, registry.UpdateOptions{})
				return out, err
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := newMemory(t)
			racing := &racingStorage{Interface: mem}
			other, err := registry.NewStore(widgetOptions(mem))
			if err != nil {
				t.Fatal(err)
			}
			st, err := registry.NewStore(widgetOptions(racing))
			if err != nil {
				t.Fatal(err)
			}
			in := widget("ns", "w", 1)
			in.Finalizers = []string{"example.com/f"}
			cur := mustCreate(t, other, in)
			if tc.marked {
				if _, _, err := other.Delete(context.Background(), "ns", "w", registry.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			tc.arm(t, racing, other)
			out, err := tc.act(st)
			if err != nil {
				t.Fatalf("request under test failed: %v", err)
			}
			if out == nil || out.UID != cur.UID {
				t.Errorf("request under test answered %+v, want the object", out)
			}
			if racing.beforeUpdate != nil || racing.beforeDelete != nil {
				t.Fatal("the other client's write never ran: the test does not race")
			}
			got, _, err := other.Get(context.Background(), "ns", "w", meta.GetOptions{})
			switch {
			case tc.recreated && (err != nil || got.UID == cur.UID):
				t.Errorf("after the race: %v, object %+v; want the namesake", err, got)
			case !tc.recreated && !meta.IsNotFound(err):
				t.Errorf("after the race: %v, object %+v; want it gone", err, got)
			}
		})
	}
}
