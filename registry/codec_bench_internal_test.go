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

func benchFlunderStore(b testing.TB) *Store[*v1beta1.Flunder] {
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
	res := Serve(st).(*served[*v1beta1.Flunder, *v1beta1.Flunder])
	data, _ := st.encodeForStorage(f)
	b.Run("response", func(b *testing.B) {
		obj, err := st.decodeFresh(data, 42)
		if err != nil {
			b.Fatal(err)
		}
		it, err := res.eager(obj)
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
	b.Run("response/memoized", func(b *testing.B) {
		it := res.lazy(&storage.KeyValue{Value: data, Revision: 42, Memo: storage.NewMemo()})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := it.JSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkFlunderFreshRead is what the first read of a stored value costs
// on its way to a response (a GET of an object nobody read before): its
// JSON from the stored bytes, and, as before lazy items, by decoding and
// encoding it.
func BenchmarkFlunderFreshRead(b *testing.B) {
	st := benchFlunderStore(b)
	res := Serve(st).(*served[*v1beta1.Flunder, *v1beta1.Flunder])
	data, err := st.encodeForStorage(benchFlunder())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("stored", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			it := res.lazy(&storage.KeyValue{Value: data, Revision: 42})
			if _, err := it.JSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode+encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj, err := st.decodeStored(storage.KeyValue{Value: data, Revision: 42, Memo: storage.NewMemo()})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := EncodeJSON(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}
