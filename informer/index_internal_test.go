package informer

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

// TestKeySet: a set of keys stays right across the move from its slice to
// its map, whatever the order of adds and removes.
func TestKeySet(t *testing.T) {
	key := func(i int) objectKey { return objectKey{"ns", fmt.Sprintf("k%02d", i)} }
	for _, tc := range []struct {
		name   string
		add    []int
		remove []int
	}{
		{"empty", nil, nil},
		{"one", []int{1}, nil},
		{"one added twice", []int{1, 1}, nil},
		{"one removed", []int{1}, []int{1}},
		{"absent removed", []int{1, 2}, []int{3}},
		{"a full slice", []int{0, 1, 2, 3, 4, 5, 6, 7}, []int{3}},
		{"past the slice", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []int{0, 10}},
		{"past the slice with repeats", []int{0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 8}, []int{8, 8}},
		{"all removed past the slice", []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s keySet
			want := map[objectKey]bool{}
			for _, i := range tc.add {
				s = s.add(key(i))
				want[key(i)] = true
			}
			for _, i := range tc.remove {
				s = s.remove(key(i))
				delete(want, key(i))
			}
			var got, wantKeys []string
			for _, k := range s.appendTo(nil) {
				got = append(got, k.name)
			}
			for k := range want {
				wantKeys = append(wantKeys, k.name)
			}
			sort.Strings(got)
			sort.Strings(wantKeys)
			if !slices.Equal(got, wantKeys) || s.len() != len(want) {
				t.Errorf("keys %v (len %d), want %v", got, s.len(), wantKeys)
			}
		})
	}
}

// TestIndexMemoryPerObject: an index whose values each file one object (a
// uid index, as the garbage collector kept over every object it follows)
// costs a few dozen bytes per object, not a map per value (~400 bytes: 2
// MiB for the load benchmark's 5,000 Flunders).
func TestIndexMemoryPerObject(t *testing.T) {
	const n = 8192
	objs := make([]*meta.PartialObjectMetadata, n)
	for j := range objs {
		objs[j] = &meta.PartialObjectMetadata{ObjectMeta: meta.ObjectMeta{
			Namespace: "ns", Name: fmt.Sprintf("obj-%05d", j), UID: fmt.Sprintf("uid-%05d", j), ResourceVersion: "1"}}
	}
	// retained is the heap that putting every object into a fresh
	// informer keeps.
	retained := func(indexers map[string]IndexFunc[*meta.PartialObjectMetadata]) float64 {
		inf := New(Config[*meta.PartialObjectMetadata]{Indexers: indexers})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, o := range objs {
			inf.put(o)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(inf)
		return float64(after.HeapAlloc) - float64(before.HeapAlloc)
	}
	byUID := map[string]IndexFunc[*meta.PartialObjectMetadata]{
		"uid": func(o *meta.PartialObjectMetadata) []string { return []string{o.UID} },
	}
	// The least of three of each, so that another test's garbage
	// collected meanwhile cannot make the index look cheap or dear.
	var plain, indexed []float64
	for range 3 {
		plain = append(plain, retained(nil))
		indexed = append(indexed, retained(byUID))
	}
	perObject := (slices.Min(indexed) - slices.Min(plain)) / n
	t.Logf("the uid index keeps %.0f bytes per object", perObject)
	if perObject > 250 {
		t.Errorf("the uid index keeps %.0f bytes per object, want at most 250", perObject)
	}
}

// keyedThing is a Keyed object whose metadata an informer must not read.
type keyedThing struct {
	ns, name, rv string
	metaCalls    *int
}

func (k *keyedThing) InformerKey() (string, string, string) { return k.ns, k.name, k.rv }
func (k *keyedThing) GetTypeMeta() *meta.TypeMeta           { return &meta.TypeMeta{} }
func (k *keyedThing) GetObjectMeta() *meta.ObjectMeta {
	*k.metaCalls++
	return &meta.ObjectMeta{}
}

// TestKeyedObjects: an informer of a Keyed type files, updates and removes
// its objects by InformerKey and never builds their ObjectMeta.
func TestKeyedObjects(t *testing.T) {
	calls := 0
	var adds, updates, deletes int
	inf := New(Config[*keyedThing]{Handlers: Handlers[*keyedThing]{
		OnAdd:    func(*keyedThing) { adds++ },
		OnUpdate: func(_, _ *keyedThing) { updates++ },
		OnDelete: func(*keyedThing) { deletes++ },
	}})
	thing := func(name, rv string) *keyedThing { return &keyedThing{"ns", name, rv, &calls} }
	inf.put(thing("a", "1"))
	inf.put(thing("b", "1"))
	inf.put(thing("a", "1")) // nothing new
	inf.put(thing("a", "2"))
	inf.remove(thing("b", "1"))
	if got, ok := inf.Get("ns", "a"); !ok || got.rv != "2" {
		t.Errorf("Get(a) = %+v, %v; want a at 2", got, ok)
	}
	if _, ok := inf.Get("ns", "b"); ok {
		t.Error("b is still there")
	}
	if adds != 2 || updates != 1 || deletes != 1 {
		t.Errorf("adds, updates, deletes = %d, %d, %d; want 2, 1, 1", adds, updates, deletes)
	}
	if calls != 0 {
		t.Errorf("GetObjectMeta called %d times", calls)
	}
}
