package registry

import (
	"testing"
	"time"

	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// benchFlunder is a Flunder as the store keeps one the load benchmark
// (bench/) created.
func benchFlunder() *v1beta1.Flunder {
	ref := v1beta1.FlunderReferenceType
	return &v1beta1.Flunder{
		ObjectMeta: meta.ObjectMeta{
			Name: "flunder-00042", Namespace: "bench", UID: "0b7e6c0e-8d7e-4a4b-9c55-6f7f1c1d2e3f",
			Generation: 1, CreationTimestamp: meta.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
			Labels: map[string]string{"app": "bench", "index": "42"},
		},
		Spec: v1beta1.FlunderSpec{FlunderReference: "flunder-ref-00042", ReferenceType: &ref},
	}
}

func benchFlunderStore(b *testing.B) *Store[*v1beta1.Flunder] {
	st, err := NewStore(Options[*v1beta1.Flunder]{
		Resource: meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"}, Kind: "Flunder",
		NamespaceScoped: true, StorageVersion: "v1beta1", Strategy: DefaultStrategy[*v1beta1.Flunder]{},
		Storage: memory.New(),
	})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkFlunderDecode decodes a stored Flunder: what every object of a
// read costs without a cache (fresh), and with one (memoized: a lookup of
// the object the first read decoded).
func BenchmarkFlunderDecode(b *testing.B) {
	st := benchFlunderStore(b)
	data, err := st.encodeForStorage(benchFlunder())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fresh", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.decodeStored(storage.KeyValue{Value: data, Revision: 42}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("memoized", func(b *testing.B) {
		kv := storage.KeyValue{Value: data, Revision: 42, Memo: storage.NewMemo()}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.decodeStored(kv); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFlunderEncode encodes a Flunder: for storage (every write) and
// for a response (every object a read returns, unless the value's memo
// has its JSON already: memoized).
func BenchmarkFlunderEncode(b *testing.B) {
	st := benchFlunderStore(b)
	f := benchFlunder()
	b.Run("storage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.encodeForStorage(f); err != nil {
				b.Fatal(err)
			}
		}
	})
	res := Serve(st)
	data, _ := st.encodeForStorage(f)
	for _, tc := range []struct {
		name string
		memo *storage.Memo
	}{{"response", nil}, {"response/memoized", storage.NewMemo()}} {
		b.Run(tc.name, func(b *testing.B) {
			obj, err := st.decodeStored(storage.KeyValue{Value: data, Revision: 42, Memo: tc.memo})
			if err != nil {
				b.Fatal(err)
			}
			it, err := res.(*served[*v1beta1.Flunder, *v1beta1.Flunder]).toServed(obj, tc.memo)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := it.JSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
