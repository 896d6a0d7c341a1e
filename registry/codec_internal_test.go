package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unique"
	"unsafe"

	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/internal/race"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

// TestStoredJSON checks that a stored value's JSON made from its bytes is,
// byte for byte, what decoding and encoding it gives.
func TestStoredJSON(t *testing.T) {
	st := benchFlunderStore(t)
	when := meta.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	yes, grace := true, int64(30)
	for _, tc := range []struct {
		name string
		f    *v1beta1.Flunder
	}{
		{"as bench/ creates it", benchFlunder()},
		{"no metadata but the timestamp", &v1beta1.Flunder{}},
		{"generateName, no uid", &v1beta1.Flunder{ObjectMeta: meta.ObjectMeta{Name: "a", GenerateName: "a-", Namespace: "ns"}}},
		{"uid only", &v1beta1.Flunder{ObjectMeta: meta.ObjectMeta{UID: "u"}}},
		{"no generation", &v1beta1.Flunder{ObjectMeta: meta.ObjectMeta{Name: "a", UID: "u", CreationTimestamp: when}}},
		{"everything", &v1beta1.Flunder{
			ObjectMeta: meta.ObjectMeta{
				Name: "a", GenerateName: "a-", Namespace: "ns", UID: "u", Generation: 7,
				CreationTimestamp: when, DeletionTimestamp: &when, DeletionGracePeriodSeconds: &grace,
				Labels:          map[string]string{"z": "1", "a": "2"},
				Annotations:     map[string]string{"note": "a <b> & \"c\" \u2028 \\ é"},
				OwnerReferences: []meta.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "o", Controller: &yes}},
				Finalizers:      []string{"x/y"},
			},
			Spec:   v1beta1.FlunderSpec{FlunderReference: "b"},
			Status: v1beta1.FlunderStatus{},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := st.encodeForStorage(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			got := storedBytes(st, data, 12345)
			if got == nil {
				t.Fatalf("no JSON from the stored bytes of %s", data)
			}
			// splice gives the same bytes in parts sharing the value's.
			parts, ok := st.splice(data, 12345)
			if !ok || !bytes.Equal(parts.Bytes(), got) {
				t.Errorf("splice: %q, %v; want the parts of %s", parts, ok, got)
			} else if &parts[0][0] != &data[0] || &parts[2][len(parts[2])-1] != &data[len(data)-1] {
				t.Error("splice copies the stored bytes instead of sharing them")
			}
			obj, err := st.decodeFresh(data, 12345)
			if err != nil {
				t.Fatal(err)
			}
			want, err := EncodeJSON(obj)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("from the stored bytes:\n%s\ndecoded and encoded:\n%s", got, want)
			}
		})
	}
}

// TestStoredJSONFallsBack checks that values not as encodeForStorage writes
// them are left to decode and encode.
func TestStoredJSONFallsBack(t *testing.T) {
	st := benchFlunderStore(t)
	const head = `{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{`
	for _, tc := range []struct{ name, value string }{
		{"another apiVersion", `{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1","metadata":{"name":"a","creationTimestamp":null}}`},
		{"apiVersion first", `{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"name":"a","creationTimestamp":null}}`},
		{"spaces", `{"kind": "Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{"name":"a","creationTimestamp":null}}`},
		{"a resourceVersion already", head + `"name":"a","resourceVersion":"3","creationTimestamp":null}}`},
		{"an unknown field first", head + `"zone":"a","creationTimestamp":null}}`},
		{"a field out of order", head + `"uid":"u","name":"a","labels":{}}}`},
		{"a field twice", head + `"name":"a","name":"b"}}`},
		{"a non-string name", head + `"name":1,"creationTimestamp":null}}`},
		{"invalid after the metadata", head + `"name":"a","creationTimestamp":null},"spec":{]}`},
		{"truncated", head + `"name":"a`},
		{"not JSON", `garbage`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := storedBytes(st, []byte(tc.value), 5); got != nil {
				t.Errorf("got %s, want a fallback to decode and encode", got)
			}
		})
	}
	if got := storedBytes(st, []byte(head+`"name":"a","creationTimestamp":null}}`), 0); got != nil {
		t.Errorf("revision 0: got %s, want a fallback", got)
	}
}

// TestLazyItem checks what a read item costs: its JSON without decoding
// the stored value (unknown fields then pass through, as docs/design.md
// says), the object decoded only when asked for, each form kept in the
// value's memo; and that a value the store cannot decode is an error, not
// a broken response.
func TestLazyItem(t *testing.T) {
	ctx := context.Background()
	st, backend := memoryFlunderStore(t)
	res := Serve(st)
	const prefix = `{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{"name":"a","namespace":"ns","creationTimestamp":null}`
	rev, err := backend.Create(ctx, "/wardle.example.com/flunders/ns/a", []byte(prefix+`,"spec":{"flunderReference":"b"},"retired":true}`))
	if err != nil {
		t.Fatal(err)
	}
	it, err := res.Get(ctx, "ns", "a", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := it.JSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{"name":"a","namespace":"ns","resourceVersion":"` +
		itoa(rev) + `","creationTimestamp":null},"spec":{"flunderReference":"b"},"retired":true}`
	if string(b) != want {
		t.Errorf("JSON:\n%s\nwant\n%s", b, want)
	}
	if _, ok := it.kv.Memo.Load(st.decodedKey()); ok {
		t.Error("JSON decoded the stored value")
	}
	// Kept in the memo as parts that share the stored bytes, not a copy.
	p, _ := it.JSONParts()
	if again, _ := it.JSONParts(); &again[1][0] != &p[1][0] {
		t.Error("JSON was not kept in the memo")
	}
	if &p[0][0] != &it.kv.Value[0] {
		t.Error("the memo keeps a copy of the stored bytes")
	}
	obj, err := it.Object()
	if err != nil {
		t.Fatal(err)
	}
	if f := obj.(*v1beta1.Flunder); f.Spec.FlunderReference != "b" || f.ResourceVersion != itoa(rev) {
		t.Errorf("Object: %+v", f)
	}
	if again, _ := it.Object(); again != obj {
		t.Error("Object decoded the value twice")
	}

	// A value T cannot decode (a field of another type) still has valid
	// JSON: it is served as stored; only what needs the object fails. A
	// value that is not JSON fails either way.
	if _, err := backend.Create(ctx, "/wardle.example.com/flunders/ns/mismatch", []byte(prefix+`,"spec":{"flunderReference":7}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := backend.Create(ctx, "/wardle.example.com/flunders/ns/truncated", []byte(prefix+`,"spec":{"flunderRef`)); err != nil {
		t.Fatal(err)
	}
	list, err := res.List(ctx, "ns", meta.ListOptions{})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("list: %v %+v", err, list)
	}
	mismatch, truncated := list.Items[1], list.Items[2]
	var v any
	if b, err := mismatch.JSON(); err != nil || json.Unmarshal(b, &v) != nil {
		t.Errorf("JSON of a value T cannot decode: %s, %v; want it as stored", b, err)
	}
	if _, err := mismatch.Object(); meta.ReasonForError(err) != meta.StatusReasonInternalError {
		t.Errorf("Object of a value T cannot decode: %v; want an internal error", err)
	}
	if b, err := truncated.JSON(); meta.ReasonForError(err) != meta.StatusReasonInternalError {
		t.Errorf("JSON of a value that is not JSON: %s, %v; want an internal error", b, err)
	}
}

// TestConvertedItemKeepsJSONOnly checks what the memo keeps of a value
// served in another version: its JSON only, when nothing but the JSON was
// asked for (a value only read keeps no decoded nor converted object
// beside its stored bytes); the objects too once something needed them,
// and a later JSON of another conversion is then made from the memo's
// object, not decoded again.
func TestConvertedItemKeepsJSONOnly(t *testing.T) {
	ctx := context.Background()
	st, backend := memoryFlunderStore(t)
	conversions := 0
	serve := func(epoch string) Resource {
		res, err := ServeVersion(st, "v9", Conversion[*v1beta1.Flunder, *v1beta1.Flunder]{
			ToStorage: func(f *v1beta1.Flunder) (*v1beta1.Flunder, error) { return f, nil },
			FromStorage: func(f *v1beta1.Flunder) (*v1beta1.Flunder, error) {
				conversions++
				c := *f
				c.Spec.FlunderReference += "-" + epoch
				return &c, nil
			},
			Epoch: epoch,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, second := serve("1"), serve("2")
	rev, err := backend.Create(ctx, "/wardle.example.com/flunders/ns/a",
		[]byte(`{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{"name":"a","namespace":"ns","creationTimestamp":null},"spec":{"flunderReference":"b"},"status":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	get := func(res Resource) Item {
		t.Helper()
		it, err := res.Get(ctx, "ns", "a", meta.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	it := get(first)
	b, err := it.JSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"Flunder","apiVersion":"wardle.example.com/v9","metadata":{"name":"a","namespace":"ns","resourceVersion":"` +
		itoa(rev) + `"},"spec":{"flunderReference":"b-1"},"status":{}}`
	if string(b) != want {
		t.Errorf("JSON:\n%s\nwant\n%s", b, want)
	}
	memo := it.kv.Memo
	if _, ok := memo.Load(st.decodedKey()); ok {
		t.Error("the memo keeps the decoded object of a value only encoded")
	}
	if _, ok := memo.Load(unique.Make(servedMemoKey{"wardle.example.com/v9", "1"})); ok {
		t.Error("the memo keeps the converted object of a value only encoded")
	}
	if again, _ := get(first).JSON(); &again[0] != &b[0] {
		t.Error("JSON was not kept in the memo")
	}
	if conversions != 1 {
		t.Errorf("%d conversions for one JSON, want 1", conversions)
	}

	obj, err := get(first).Object()
	if err != nil {
		t.Fatal(err)
	}
	if f := obj.(*v1beta1.Flunder); f.Spec.FlunderReference != "b-1" || f.ResourceVersion != itoa(rev) || f.APIVersion != "wardle.example.com/v9" {
		t.Errorf("Object: %+v", f)
	}
	if _, ok := memo.Load(st.decodedKey()); !ok {
		t.Error("Object did not keep the decoded object")
	}
	if again, _ := get(first).Object(); again != obj {
		t.Error("Object decoded the value twice")
	}
	b2, err := get(second).JSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(want, "b-1", "b-2", 1); string(b2) != want {
		t.Errorf("JSON of the second conversion:\n%s\nwant\n%s", b2, want)
	}
	if _, ok := memo.Load(unique.Make(servedMemoKey{"wardle.example.com/v9", "2"})); !ok {
		t.Error("the second conversion's JSON did not convert the memo's decoded object through the memo")
	}
	if conversions != 3 {
		t.Errorf("%d conversions, want 3 (one JSON, one Object, one JSON of the second)", conversions)
	}
}

// TestConvertedItemSharesStoredBytes checks the JSON of a value served
// through a conversion in the storage version, as every custom resource
// is: the stored bytes around the resourceVersion when the conversion left
// the object as stored (the memo keeps no copy of them), its own encoding
// when the conversion changed it.
func TestConvertedItemSharesStoredBytes(t *testing.T) {
	ctx := context.Background()
	st, backend := memoryFlunderStore(t)
	res, err := ServeVersion(st, "v1beta1", Conversion[*v1beta1.Flunder, *v1beta1.Flunder]{
		ToStorage: func(f *v1beta1.Flunder) (*v1beta1.Flunder, error) { return f, nil },
		FromStorage: func(f *v1beta1.Flunder) (*v1beta1.Flunder, error) {
			c := *f
			if c.Spec.FlunderReference == "" {
				c.Spec.FlunderReference = "defaulted"
			}
			return &c, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const head = `{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{"name":"%s","namespace":"ns"`
	for _, tc := range []struct {
		name, spec, want string
		shared           bool
	}{
		{"unchanged", `{"flunderReference":"b"}`, `{"flunderReference":"b"}`, true},
		{"defaulted", `{}`, `{"flunderReference":"defaulted"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := backend.Create(ctx, "/wardle.example.com/flunders/ns/"+tc.name,
				fmt.Appendf(nil, head+`},"spec":%s,"status":{}}`, tc.name, tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			it, err := res.Get(ctx, "ns", tc.name, meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			parts, err := it.JSONParts()
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(head+`,"resourceVersion":"%d"},"spec":%s,"status":{}}`, tc.name, rev, tc.want)
			if got := parts.Bytes(); string(got) != want {
				t.Errorf("JSON:\n%s\nwant\n%s", got, want)
			}
			if b, _ := it.JSON(); string(b) != want {
				t.Errorf("JSON():\n%s\nwant\n%s", b, want)
			}
			if shared := &parts[0][0] == &it.kv.Value[0]; shared != tc.shared {
				t.Errorf("the JSON shares the stored bytes: %v, want %v", shared, tc.shared)
			}
		})
	}
}

// memoryFlunderStore is a store of Flunders over a memory backend the test
// writes values into directly, as another writer of the prefix would.
// TestJSONMemoAllocations: a stored value's JSON in the storage version,
// made into the value's memo, is the bytes an encoding of the decoded
// value gives, and costs two allocations: the resourceVersion's bytes, and
// the memo's entry with the parts in it. The memo's key and the parts
// each took an allocation of their own (the parts one more cache miss per
// item of a LIST).
func TestJSONMemoAllocations(t *testing.T) {
	ctx := context.Background()
	st, _ := memoryFlunderStore(t)
	res := Serve(st)
	f := &v1beta1.Flunder{ObjectMeta: meta.ObjectMeta{Name: "a", Labels: map[string]string{"l": "v"}},
		Spec: v1beta1.FlunderSpec{FlunderReference: "b"}}
	if _, err := res.Create(ctx, "ns", f, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	it, err := res.Get(ctx, "ns", "a", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := it.Object()
	if err != nil {
		t.Fatal(err)
	}
	want, err := EncodeJSON(obj)
	if err != nil {
		t.Fatal(err)
	}
	src := res.(*served[*v1beta1.Flunder, *v1beta1.Flunder])
	memos, next := make([]storage.Memo, 101), 0
	var got *servedJSON
	allocs := testing.AllocsPerRun(100, func() {
		kv := storage.KeyValue{Key: it.kv.Key, Value: it.kv.Value, Revision: it.kv.Revision, Memo: &memos[next]}
		next++
		if got, err = src.json(&kv); err != nil {
			t.Fatal(err)
		}
	})
	if got.at < 0 || got.parts(it.kv.Value)[2] == nil {
		t.Error("the JSON was encoded, not made from the stored bytes")
	}
	if b := got.parts(it.kv.Value).Bytes(); !bytes.Equal(b, want) {
		t.Errorf("JSON from the memo:\n%s\nwant\n%s", b, want)
	}
	if again, _ := src.json(&storage.KeyValue{Value: it.kv.Value, Revision: it.kv.Revision, Memo: &memos[next-1]}); again != got {
		t.Error("the JSON was made again, not read from the memo")
	}
	if allocs > 2 && !race.Enabled {
		t.Errorf("a value's JSON into its memo: %v allocations, want 2", allocs)
	}
}

func memoryFlunderStore(t *testing.T) (*Store[*v1beta1.Flunder], *memory.Store) {
	t.Helper()
	backend := memory.New()
	t.Cleanup(func() { backend.Close() })
	st, err := NewStore(Options[*v1beta1.Flunder]{
		Resource: meta.GroupResource{Group: "wardle.example.com", Resource: "flunders"}, Kind: "Flunder",
		NamespaceScoped: true, StorageVersion: "v1beta1", Strategy: DefaultStrategy[*v1beta1.Flunder]{},
		Storage: backend,
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, backend
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// FuzzStoredJSON: stored bytes may come from any writer of the etcd
// prefix. Whatever they hold, storedJSON yields nil (decode and encode
// then) or valid JSON carrying the resourceVersion once.
func FuzzStoredJSON(f *testing.F) {
	st := benchFlunderStore(f)
	const head = `{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1","metadata":{`
	for _, s := range []string{head + `}}`, head + `"name":"a"},"spec":{}}`, head + `"name":"a","uid":"u","generation":2}}`,
		head + `"namespace":"n","labels":{"a":"b"}}}`, head + `"name":"a","resourceVersion":"1"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		got := storedBytes(st, value, 77)
		if got == nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("storedJSON(%s) = %s: not JSON", value, got)
		}
		rv := []byte(`"resourceVersion":"77"`)
		if n := bytes.Count(got, rv) - bytes.Count(value, rv); n != 1 {
			t.Fatalf("storedJSON(%s) = %s: %d resourceVersions added", value, got, n)
		}
	})
}

// storedBytes is storedJSON's parts in one piece, nil when it has none.
func storedBytes[T meta.Object](st *Store[T], value []byte, rev int64) []byte {
	p, ok := st.storedJSON(value, rev)
	if !ok {
		return nil
	}
	return p.Bytes()
}

// TestServedJSONSize: the watch cache's memo keeps a servedJSON per value
// a client read, in its entry's allocation (32 bytes of key and value
// words): with the parts as three slice headers it was 80 bytes, the
// entry 112; the stored value's parts are made at each read instead.
func TestServedJSONSize(t *testing.T) {
	if size := unsafe.Sizeof(servedJSON{}); size > 32 {
		t.Errorf("a servedJSON is %d bytes, want at most 32", size)
	}
}
