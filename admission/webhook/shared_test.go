package webhook

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/cel-go/common/types/ref"

	"github.com/apikit-dev/apikit/admission"
	"github.com/apikit-dev/apikit/authn"
	"github.com/apikit-dev/apikit/cel"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/schema/structural"
)

// TestExpressionVarsAreTheJSON: object, oldObject and request, read from
// the write's Go objects, are what CEL read from the AdmissionRequest's
// JSON (a webhook's body) before: the same values, the defaulted
// apiVersion and kind, options and user included.
func TestExpressionVarsAreTheJSON(t *testing.T) {
	widgetKind := widgets.GroupVersion().WithKind("Widget")
	typed := func(labels map[string]string) *widget {
		w := &widget{ObjectMeta: meta.ObjectMeta{Name: "w1", Namespace: "default", Labels: labels,
			CreationTimestamp: meta.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))}}
		w.Spec.Size = 3
		return w
	}
	withKind := typed(nil)
	withKind.TypeMeta = meta.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}
	user := &authn.User{Name: "alice", UID: "7", Groups: []string{"dev"}, Extra: map[string][]string{"scope": {"a"}, "none": nil}}
	for name, a := range map[string]*admission.Attributes{
		"create": {Operation: admission.Create, Kind: widgetKind, Resource: widgets, Namespace: "default", Name: "w1",
			VersionedObject: typed(map[string]string{"env": "prod"}), User: user},
		"update with options": {Operation: admission.Update, Kind: widgetKind, Resource: widgets, Namespace: "default", Name: "w1",
			VersionedObject: withKind, VersionedOldObject: typed(nil), DryRun: true, User: user,
			Options: &meta.UpdateOptions{FieldManager: "kubectl", DryRun: []string{"All"}}},
		"delete": {Operation: admission.Delete, Kind: widgetKind, Resource: widgets, Namespace: "default", Name: "w1",
			VersionedOldObject: typed(nil), Subresource: "status"},
		"connect": {Operation: admission.Connect, Kind: widgetKind, Resource: widgets, Name: "w1"},
	} {
		t.Run(name, func(t *testing.T) {
			vars, err := ExpressionVars(a, a.Kind, a.Resource, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			req, _, err := newRequest(&invocation{kind: a.Kind, resource: a.Resource}, a, a.VersionedObject, a.VersionedOldObject)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			want, err := structural.DecodeJSON(data)
			if err != nil {
				t.Fatal(err)
			}
			wantReq := want.(map[string]any)
			got := map[string]any{}
			for k, v := range vars {
				if rv, ok := v.(ref.Val); ok {
					got[k] = rv.Value()
				} else {
					got[k] = v
				}
			}
			gotReq := got[cel.RequestVarName].(map[string]any)
			if gotReq["uid"] == "" || gotReq["uid"] == nil {
				t.Error("no uid")
			}
			delete(gotReq, "uid")
			delete(wantReq, "uid")
			if !reflect.DeepEqual(gotReq, wantReq) {
				t.Errorf("request\n%#v\nJSON\n%#v", gotReq, wantReq)
			}
			if !reflect.DeepEqual(got[cel.ObjectVarName], wantReq["object"]) || !reflect.DeepEqual(got[cel.OldObjectVarName], wantReq["oldObject"]) {
				t.Errorf("object %#v oldObject %#v\nJSON %#v %#v", got[cel.ObjectVarName], got[cel.OldObjectVarName], wantReq["object"], wantReq["oldObject"])
			}
			// Without request: the same objects, and no request.
			lean, err := ExpressionVars(a, a.Kind, a.Resource, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := lean[cel.RequestVarName]; ok || len(lean) != 2 {
				t.Errorf("without request: %v", lean)
			}
			for _, k := range []string{cel.ObjectVarName, cel.OldObjectVarName} {
				v := lean[k]
				if rv, ok := v.(ref.Val); ok {
					v = rv.Value()
				}
				if !reflect.DeepEqual(v, got[k]) {
					t.Errorf("without request, %s %#v, want %#v", k, v, got[k])
				}
			}
		})
	}
}
