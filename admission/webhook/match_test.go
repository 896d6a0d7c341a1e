package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema/structural"
)

// nsLabels is a namespace lookup over a fixed table.
type nsLabels map[string]map[string]string

func (n nsLabels) NamespaceLabels(_ context.Context, name string) (map[string]string, error) {
	if name == "broken" {
		return nil, errors.New("storage is down")
	}
	l, ok := n[name]
	if !ok {
		return nil, meta.NewNotFound(meta.GroupResource{Resource: "namespaces"}, name)
	}
	return l, nil
}

// TestNamespaceMatches is kube's namespace matcher: cluster-scoped writes
// always match, namespaced ones by their namespace's labels (404 for a
// namespace that does not exist), a namespace by its own labels: the new
// ones on create and update, the stored ones on delete and subresources.
func TestNamespaceMatches(t *testing.T) {
	lookup := nsLabels{"hooked": {"webhook": "on"}, "plain": nil}
	sel, err := (&meta.LabelSelector{MatchLabels: map[string]string{"webhook": "on"}}).AsSelector()
	if err != nil {
		t.Fatal(err)
	}
	nsObj := func(labels map[string]string) meta.Object {
		return &widget{ObjectMeta: meta.ObjectMeta{Name: "team", Labels: labels}}
	}
	namespaces := meta.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	on, off := map[string]string{"webhook": "on"}, map[string]string{"webhook": "off"}
	for _, tc := range []struct {
		name    string
		lookup  NamespaceLabels
		a       admission.Attributes
		want    bool
		wantErr string
	}{
		{name: "cluster-scoped", lookup: lookup, a: admission.Attributes{Resource: widgets}, want: true},
		{name: "labelled namespace", lookup: lookup, a: admission.Attributes{Resource: widgets, Namespace: "hooked"}, want: true},
		{name: "unlabelled namespace", lookup: lookup, a: admission.Attributes{Resource: widgets, Namespace: "plain"}},
		{name: "missing namespace", lookup: lookup, a: admission.Attributes{Resource: widgets, Namespace: "gone"}, wantErr: `namespaces "gone" not found`},
		{name: "lookup fails", lookup: lookup, a: admission.Attributes{Resource: widgets, Namespace: "broken"},
			wantErr: `Internal error occurred: looking up namespace "broken": storage is down`},
		{name: "no namespaces served", a: admission.Attributes{Resource: widgets, Namespace: "hooked"}},
		{name: "namespace create", lookup: lookup, a: admission.Attributes{Operation: admission.Create, Resource: namespaces, Name: "team", Object: nsObj(on)}, want: true},
		{name: "namespace update, labels removed", lookup: lookup,
			a: admission.Attributes{Operation: admission.Update, Resource: namespaces, Name: "team", Object: nsObj(off), OldObject: nsObj(on)}},
		{name: "namespace delete", lookup: lookup, a: admission.Attributes{Operation: admission.Delete, Resource: namespaces, Name: "team", OldObject: nsObj(on)}, want: true},
		{name: "namespace status: the stored labels", lookup: lookup,
			a: admission.Attributes{Operation: admission.Update, Resource: namespaces, Subresource: "status", Name: "team", Object: nsObj(off), OldObject: nsObj(on)}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NamespaceMatches(context.Background(), tc.lookup, sel, &tc.a)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

// TestRequestVars: the request CEL sees is what its JSON decodes to.
func TestRequestVars(t *testing.T) {
	dry := true
	for _, req := range []*AdmissionRequest{
		{UID: "u", Kind: GroupVersionKind{"g", "v", "K"}, Resource: GroupVersionResource{"g", "v", "ks"}, Operation: "CREATE"},
		{UID: "u", Kind: GroupVersionKind{"", "v1", "Pod"}, Resource: GroupVersionResource{"", "v1", "pods"}, SubResource: "status",
			RequestKind: &GroupVersionKind{"", "v1", "Pod"}, RequestResource: &GroupVersionResource{"", "v1", "pods"}, RequestSubResource: "status",
			Name: "p", Namespace: "ns", Operation: "UPDATE", DryRun: &dry,
			UserInfo: UserInfo{Username: "alice", UID: "1", Groups: []string{"a", "b"}, Extra: map[string][]string{"scopes": {"x"}, "empty": {}, "nil": nil}},
			Object:   json.RawMessage(`{"kind":"Pod","spec":{"n":1,"f":0.5,"l":[null,true]}}`), OldObject: json.RawMessage(`{"kind":"Pod"}`),
			Options: json.RawMessage(`{"kind":"UpdateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl"}`)},
	} {
		vars, err := requestVars(req)
		if err != nil {
			t.Fatal(err)
		}
		got := vars[cel.RequestVarName].(ref.Val).Value()
		data, _ := json.Marshal(req)
		want, err := structural.DecodeJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("request\n%#v\nwant\n%#v", got, want)
		}
	}
}
