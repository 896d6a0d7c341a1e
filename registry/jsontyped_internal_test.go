package registry

import (
	"context"
	"fmt"
	"testing"

	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/meta"
)

// TestJSONPartsTyped: an item read from storage says how long the type
// fields leading its JSON are, in the version it is served in, whichever
// way its JSON was made (from the stored bytes, by encoding, through a
// conversion); one made in memory says 0, for the caller to look.
func TestJSONPartsTyped(t *testing.T) {
	ctx := context.Background()
	st, backend := memoryFlunderStore(t)
	converted, err := ServeVersion(st, "v1alpha1", Conversion[*v1beta1.Flunder, *v1beta1.Flunder]{
		ToStorage:   func(f *v1beta1.Flunder) (*v1beta1.Flunder, error) { return f, nil },
		FromStorage: func(f *v1beta1.Flunder) (*v1beta1.Flunder, error) { c := *f; return &c, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := Serve(st)
	const (
		beta  = `{"kind":"Flunder","apiVersion":"wardle.example.com/v1beta1",`
		alpha = `{"kind":"Flunder","apiVersion":"wardle.example.com/v1alpha1",`
	)
	for i, tc := range []struct {
		name, value string
		res         Resource
		want        string
	}{
		{"as stored", beta + `"metadata":{"name":"%s","namespace":"ns"},"spec":{},"status":{}}`, stored, beta},
		// Not as this store writes values: decoded and encoded.
		{"another writer's", `{"apiVersion":"wardle.example.com/v1beta1","kind":"Flunder","metadata":{"namespace":"ns","name":"%s"}}`, stored, beta},
		{"converted", beta + `"metadata":{"name":"%s","namespace":"ns"},"spec":{},"status":{}}`, converted, alpha},
	} {
		name := fmt.Sprintf("f%d", i)
		t.Run(tc.name, func(t *testing.T) {
			if _, err := backend.Create(ctx, "/wardle.example.com/flunders/ns/"+name, fmt.Appendf(nil, tc.value, name)); err != nil {
				t.Fatal(err)
			}
			list, err := tc.res.List(ctx, "ns", meta.ListOptions{FieldSelector: "metadata.name=" + name})
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("List = %d items, %v", len(list.Items), err)
			}
			for range 2 { // made, then from the memo
				p, typeLen, err := list.Items[0].JSONPartsTyped()
				if err != nil {
					t.Fatal(err)
				}
				if typeLen != len(tc.want) || string(p[0][:typeLen]) != tc.want {
					t.Fatalf("typeLen %d of %s, want %d: %s", typeLen, p.Bytes(), len(tc.want), tc.want)
				}
				if whole, _ := list.Items[0].JSON(); string(whole) != string(p.Bytes()) {
					t.Fatalf("parts %s, JSON %s", p.Bytes(), whole)
				}
			}
		})
	}
	obj := &v1beta1.Flunder{TypeMeta: meta.TypeMeta{Kind: "Flunder", APIVersion: "wardle.example.com/v1beta1"}}
	if p, typeLen, err := NewItem(obj).JSONPartsTyped(); err != nil || typeLen != 0 || len(p[0]) == 0 {
		t.Fatalf("an item made in memory: typeLen %d, %s, %v; want 0", typeLen, p.Bytes(), err)
	}
}
