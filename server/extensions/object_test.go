package extensions

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/apikit-dev/apikit/schema"
)

// storedCR is a custom resource as the store keeps it: metadata with
// managedFields (most of its bytes), a spec and a status.
const storedCR = `{"kind":"Flunder","apiVersion":"bench.apikit.dev/v1","metadata":{"name":"flunder-00042","namespace":"default",` +
	`"uid":"6f1c1a52-8d0e-4b8e-9a51-7d8f1c2e3a4b","resourceVersion":"1234","generation":3,"creationTimestamp":"2026-12-01T19:20:05Z",` +
	`"labels":{"app":"bench","index":"42","updated":"true"},"managedFields":[` +
	`{"manager":"Go-http-client","operation":"Update","apiVersion":"bench.apikit.dev/v1","time":"2026-12-01T19:20:06Z","fieldsType":"FieldsV1",` +
	`"fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:index":{},"f:updated":{}}},"f:spec":{".":{},"f:referenceType":{},"f:replicas":{}}}},` +
	`{"manager":"bench","operation":"Apply","apiVersion":"bench.apikit.dev/v1","time":"2026-12-01T19:20:07Z","fieldsType":"FieldsV1",` +
	`"fieldsV1":{"f:spec":{"f:flunderReference":{}}}}]},` +
	`"spec":{"flunderReference":"flunder-applied-00042","referenceType":"Flunder","replicas":1,"ratio":0.5},"status":{"phase":"Ready"}}`

func TestObjectUnmarshalJSON(t *testing.T) {
	var o Object
	if err := json.Unmarshal([]byte(storedCR), &o); err != nil {
		t.Fatal(err)
	}
	if o.Kind != "Flunder" || o.APIVersion != "bench.apikit.dev/v1" || o.Name != "flunder-00042" || o.Generation != 3 ||
		len(o.ManagedFields) != 2 || o.Labels["updated"] != "true" || o.CreationTimestamp.IsZero() {
		t.Fatalf("metadata: %+v", o.ObjectMeta)
	}
	wantSpec := map[string]any{"flunderReference": "flunder-applied-00042", "referenceType": "Flunder", "replicas": int64(1), "ratio": 0.5}
	if !reflect.DeepEqual(o.Content, map[string]any{"spec": wantSpec}) {
		t.Fatalf("content: %#v", o.Content)
	}
	if !reflect.DeepEqual(o.Status, map[string]any{"phase": "Ready"}) {
		t.Fatalf("status: %#v", o.Status)
	}
	// What it encodes to decodes to the same object.
	b, err := json.Marshal(&o)
	if err != nil {
		t.Fatal(err)
	}
	var again Object
	if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(again, o) {
		t.Fatalf("round trip: %v\n%s", err, b)
	}

	for _, tc := range []struct {
		name, body string
		check      func(*Object) bool
		err        string
	}{
		{name: "unknown metadata fields dropped", body: `{"metadata":{"name":"a","colour":"red"}}`,
			check: func(o *Object) bool { return o.Name == "a" }},
		{name: "null metadata, kind and apiVersion", body: `{"metadata":null,"kind":null,"apiVersion":null,"spec":{}}`,
			check: func(o *Object) bool { return o.Kind == "" && o.Name == "" && o.Content["spec"] != nil }},
		{name: "null status", body: `{"status":null}`, check: func(o *Object) bool { return o.Status == nil && o.Content == nil }},
		{name: "the last of a duplicate key", body: `{"spec":{"a":1},"spec":{"b":2}}`,
			check: func(o *Object) bool { return reflect.DeepEqual(o.Content["spec"], map[string]any{"b": int64(2)}) }},
		{name: "spaces", body: " {\n \"metadata\" : { \"name\" : \"a\" } , \"kind\" : \"K\" }\n",
			check: func(o *Object) bool { return o.Name == "a" && o.Kind == "K" }},
		{name: "array", body: `[]`, err: "a custom resource must be a JSON object"},
		{name: "null", body: `null`, err: "a custom resource must be a JSON object"},
		{name: "string", body: `"x"`, err: "a custom resource must be a JSON object"},
		{name: "kind a number", body: `{"kind":1}`, err: "kind must be a string"},
		{name: "apiVersion an object", body: `{"apiVersion":{}}`, err: "apiVersion must be a string"},
		{name: "metadata a list", body: `{"metadata":[]}`, err: "metadata must be an object"},
		{name: "metadata a string", body: `{"metadata":"x"}`, err: "metadata must be an object"},
		{name: "metadata of the wrong types", body: `{"metadata":{"name":1}}`, err: "metadata: "},
		{name: "a number too large", body: `{"spec":{"n":1e400}}`, err: "1e400"},
		{name: "truncated", body: `{"spec":{`, err: "unexpected"},
		{name: "data after the object", body: `{"spec":{}} {}`, err: "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Object
			err := o.UnmarshalJSON([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || !tc.check(&o) {
				t.Fatalf("%+v, %v", o, err)
			}
		})
	}
}

// TestObjectUnmarshalJSONPrunesAndDefaults checks that an object with a
// schema (a request's body) is pruned and defaulted as it is decoded.
func TestObjectUnmarshalJSONPrunesAndDefaults(t *testing.T) {
	s, err := schema.FromOpenAPIV3(json.RawMessage(`{"type":"object","properties":{"spec":{"type":"object","properties":{
		"a":{"type":"string"},"n":{"type":"integer","default":1}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	o := Object{schema: s}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"x"},"spec":{"a":"b","colour":"red"},"extra":true}`), &o); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"spec": map[string]any{"a": "b", "n": int64(1)}}; !reflect.DeepEqual(o.Content, want) {
		t.Fatalf("content %#v, want %#v", o.Content, want)
	}
	if got := o.UnknownFields(); len(got) != 2 {
		t.Fatalf("pruned %v, want extra and spec.colour", got)
	}
}

// TestObjectUnmarshalJSONAllocs bounds what decoding a stored custom
// resource allocates: every read from storage and every write decodes one,
// and metadata (managedFields above all) is most of it. Decoding metadata
// straight into its Go type, rather than into a generic map that is
// encoded and decoded again, allocates about half as much.
func TestObjectUnmarshalJSONAllocs(t *testing.T) {
	data := []byte(storedCR)
	allocs := testing.AllocsPerRun(50, func() {
		var o Object
		if err := o.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 120 {
		t.Fatalf("decoding a custom resource allocates %.0f times, want at most 120", allocs)
	}
}

func BenchmarkObjectUnmarshalJSON(b *testing.B) {
	data := []byte(storedCR)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var o Object
		if err := o.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFromStorage checks the served version's conversion from storage: an
// object the schema leaves as it is shares the stored object's values (the
// memo keeps one copy, not two); one the schema changes is served pruned
// and defaulted, and the stored object is left as it was.
func TestFromStorage(t *testing.T) {
	s, err := schema.FromOpenAPIV3(json.RawMessage(`{"type":"object","properties":{"spec":{"type":"object","properties":{
		"a":{"type":"string"},"n":{"type":"integer","default":1}}},"status":{"type":"object","properties":{"phase":{"type":"string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := &crStrategy{schema: s}
	decode := func(body string) *Object {
		t.Helper()
		var o Object
		if err := json.Unmarshal([]byte(body), &o); err != nil {
			t.Fatal(err)
		}
		return &o
	}
	for _, tc := range []struct {
		name, stored string
		shared       bool
		want         map[string]any
	}{
		{"defaulted when written", `{"metadata":{"name":"x"},"spec":{"a":"b","n":2},"status":{"phase":"Ready"}}`, true,
			map[string]any{"spec": map[string]any{"a": "b", "n": int64(2)}}},
		{"no content", `{"metadata":{"name":"x"}}`, true, nil},
		{"a default added since", `{"metadata":{"name":"x"},"spec":{"a":"b"}}`, false,
			map[string]any{"spec": map[string]any{"a": "b", "n": int64(1)}}},
		{"a field dropped since", `{"metadata":{"name":"x"},"spec":{"a":"b","n":2,"old":true}}`, false,
			map[string]any{"spec": map[string]any{"a": "b", "n": int64(2)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := decode(tc.stored)
			before := decode(tc.stored)
			got, err := c.fromStorage(stored)
			if err != nil {
				t.Fatal(err)
			}
			if got == stored {
				t.Fatal("fromStorage returned the stored object itself, whose type meta the registry then sets")
			}
			if !reflect.DeepEqual(got.Content, tc.want) || got.Name != "x" {
				t.Fatalf("served %#v, want %#v", got.Content, tc.want)
			}
			if !reflect.DeepEqual(stored, before) {
				t.Fatalf("the stored object changed: %#v", stored.Content)
			}
			shared := got.Content != nil && reflect.ValueOf(got.Content).Pointer() == reflect.ValueOf(stored.Content).Pointer()
			if tc.want != nil && shared != tc.shared {
				t.Fatalf("served content shared with the stored object: %v, want %v", shared, tc.shared)
			}
		})
	}
}
