package wardleapi_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/examples/wardle/apis/v1alpha1"
	"github.com/apikit-dev/apikit/examples/wardle/apis/v1beta1"
	"github.com/apikit-dev/apikit/examples/wardle/wardleapi"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func newAPI(t *testing.T) (*wardleapi.API, map[string]registry.Resource) {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	api, err := wardleapi.New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	g, err := api.GroupInfo()
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != wardleapi.GroupName || len(g.Versions) != 2 || g.Versions[0].Version != "v1beta1" {
		t.Fatalf("group %+v: want v1beta1 preferred, then v1alpha1", g)
	}
	res := map[string]registry.Resource{}
	for _, v := range g.Versions {
		for _, r := range v.Resources {
			res[r.Info().Resource+"/"+v.Version] = r
		}
	}
	return api, res
}

func rt[T ~string](s T) *T { return &s }

func TestFlunderConversionRoundTrip(t *testing.T) {
	_, res := newAPI(t)
	ctx := context.Background()
	alpha, beta := res["flunders/v1alpha1"], res["flunders/v1beta1"]
	if alpha == nil || beta == nil || res["fischers/v1alpha1"] == nil {
		t.Fatalf("resources %v", res)
	}
	meta1 := meta.ObjectMeta{Name: "f1", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"note": "<kept>"},
		Finalizers: []string{"example.com/keep"}}
	for _, tc := range []struct {
		name      string
		in        *v1alpha1.Flunder
		wantBeta  v1beta1.FlunderSpec
		wantAlpha v1alpha1.FlunderSpec
	}{
		{
			name:      "reference defaults to Flunder",
			in:        &v1alpha1.Flunder{Spec: v1alpha1.FlunderSpec{Reference: "other"}},
			wantBeta:  v1beta1.FlunderSpec{FlunderReference: "other", ReferenceType: rt(v1beta1.FlunderReferenceType)},
			wantAlpha: v1alpha1.FlunderSpec{Reference: "other", ReferenceType: rt(v1alpha1.FlunderReferenceType)},
		},
		{
			name:      "fischer reference",
			in:        &v1alpha1.Flunder{Spec: v1alpha1.FlunderSpec{Reference: "fish", ReferenceType: rt(v1alpha1.FischerReferenceType)}},
			wantBeta:  v1beta1.FlunderSpec{FischerReference: "fish", ReferenceType: rt(v1beta1.FischerReferenceType)},
			wantAlpha: v1alpha1.FlunderSpec{Reference: "fish", ReferenceType: rt(v1alpha1.FischerReferenceType)},
		},
		{
			name: "no reference",
			in:   &v1alpha1.Flunder{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.ObjectMeta = meta1
			in.ObjectMeta.Labels = map[string]string{"a": "b"}
			created, err := alpha.Create(ctx, "ns", in, registry.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				_, _, _ = beta.Update(ctx, "ns", "f1", func(_ context.Context, cur meta.Object) (meta.Object, error) {
					cur.GetObjectMeta().Finalizers = nil
					return cur, nil
				}, registry.UpdateOptions{})
				_, _, _ = beta.Delete(ctx, "ns", "f1", registry.DeleteOptions{})
			}()
			ca := object(t, created).(*v1alpha1.Flunder)
			if ca.APIVersion != "wardle.example.com/v1alpha1" || ca.Kind != "Flunder" || !reflect.DeepEqual(ca.Spec, tc.wantAlpha) {
				t.Errorf("create answered %s %s %+v, want v1alpha1 %+v", ca.APIVersion, ca.Kind, ca.Spec, tc.wantAlpha)
			}

			gotBeta, err := beta.Get(ctx, "ns", "f1", meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b := object(t, gotBeta).(*v1beta1.Flunder)
			if b.APIVersion != "wardle.example.com/v1beta1" || !reflect.DeepEqual(b.Spec, tc.wantBeta) {
				t.Errorf("stored %s %+v, want %+v", b.APIVersion, b.Spec, tc.wantBeta)
			}
			gotAlpha, err := alpha.Get(ctx, "ns", "f1", meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a := object(t, gotAlpha).(*v1alpha1.Flunder)
			if !reflect.DeepEqual(a.Spec, tc.wantAlpha) {
				t.Errorf("v1alpha1 read back %+v, want %+v", a.Spec, tc.wantAlpha)
			}
			for _, m := range []*meta.ObjectMeta{&a.ObjectMeta, &b.ObjectMeta} {
				if m.Name != "f1" || m.Namespace != "ns" || m.UID != ca.UID || m.ResourceVersion != ca.ResourceVersion ||
					m.Generation != 1 || m.Labels["a"] != "b" || m.Annotations["note"] != "<kept>" || len(m.Finalizers) != 1 {
					t.Errorf("metadata not preserved: %+v", *m)
				}
			}
			// Each version's JSON names its own apiVersion, even when both
			// come from one cached stored value.
			for _, tc := range []struct {
				it   registry.Item
				want string
			}{{gotAlpha, "wardle.example.com/v1alpha1"}, {gotBeta, "wardle.example.com/v1beta1"}} {
				raw, err := tc.it.JSON()
				if err != nil {
					t.Fatal(err)
				}
				var head struct{ APIVersion string }
				if err := json.Unmarshal(raw, &head); err != nil || head.APIVersion != tc.want {
					t.Errorf("JSON apiVersion %q, want %q (%s)", head.APIVersion, tc.want, raw)
				}
			}

			// An update through v1alpha1 keeps what v1alpha1 cannot see.
			up, _, err := alpha.Update(ctx, "ns", "f1", func(_ context.Context, cur meta.Object) (meta.Object, error) {
				f := cur.(*v1alpha1.Flunder)
				f.Labels["c"] = "d"
				return f, nil
			}, registry.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if u := object(t, up).(*v1alpha1.Flunder); !reflect.DeepEqual(u.Spec, tc.wantAlpha) || u.Labels["c"] != "d" || u.Generation != 1 {
				t.Errorf("after a metadata update through v1alpha1: %+v", u)
			}
		})
	}
}

func TestFlunderValidation(t *testing.T) {
	_, res := newAPI(t)
	_, err := res["flunders/v1beta1"].Create(context.Background(), "ns", &v1beta1.Flunder{
		ObjectMeta: meta.ObjectMeta{Name: "bad"},
		Spec:       v1beta1.FlunderSpec{FlunderReference: "a", FischerReference: "b"},
	}, registry.WriteOptions{})
	st := meta.StatusOf(err)
	if st.Code != 422 || st.Message != `Flunder.wardle.example.com "bad" is invalid: spec.fischerReference: Invalid value: "b": cannot be set with flunderReference at the same time` {
		t.Errorf("got %d %q", st.Code, st.Message)
	}
}

func TestBanFlunder(t *testing.T) {
	api, res := newAPI(t)
	ctx := context.Background()
	if _, err := res["fischers/v1alpha1"].Create(ctx, "", &v1alpha1.Fischer{
		ObjectMeta:         meta.ObjectMeta{Name: "fish"},
		DisallowedFlunders: []string{"banned"},
	}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	chain := admission.Chain{api.BanFlunder()}
	attrs := func(name string, op admission.Operation) *admission.Attributes {
		return &admission.Attributes{Operation: op, Name: name, Namespace: "ns",
			Resource: meta.GroupVersionResource{Group: wardleapi.GroupName, Version: "v1beta1", Resource: "flunders"}}
	}
	err := chain.Validate(ctx, attrs("banned", admission.Create))
	if st := meta.StatusOf(err); st.Code != 403 || st.Message != `flunders.wardle.example.com "banned" is forbidden: this name may not be used, please change the resource name` {
		t.Errorf("banned create: %d %q", st.Code, st.Message)
	}
	if err := chain.Validate(ctx, attrs("fine", admission.Create)); err != nil {
		t.Errorf("allowed name refused: %v", err)
	}
	if err := chain.Validate(ctx, attrs("banned", admission.Update)); err != nil {
		t.Errorf("updates are not the plugin's business: %v", err)
	}
}

// object returns an item's object, failing the test if it cannot be decoded.
func object(t testing.TB, it registry.Item) meta.Object {
	t.Helper()
	obj, err := it.Object()
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
