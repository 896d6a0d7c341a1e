package registry

import (
	"context"
	"testing"

	"github.com/apikit-dev/apikit/meta"
)

type review struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata,omitempty"`
	Spec            string `json:"spec,omitempty"`
	Status          string `json:"status,omitempty"`
}

func TestCreateOnly(t *testing.T) {
	res, err := NewCreateOnly(CreateOnlyOptions[*review]{
		GroupVersion: meta.GroupVersion{Group: "reviews.example.com", Version: "v1"},
		Resource:     "reviews",
		Kind:         "Review",
		Create: func(_ context.Context, r *review) (*review, error) {
			r.Status = "seen " + r.Spec
			return r, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	info := res.Info()
	if len(info.Verbs) != 1 || !info.Serves("create") || info.Serves("get") || info.SingularName != "review" {
		t.Errorf("info = %+v", info)
	}
	obj := res.New().(*review)
	obj.Spec = "x"
	it, err := res.Create(context.Background(), "", obj, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := it.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"Review","apiVersion":"reviews.example.com/v1","metadata":{},"spec":"x","status":"seen x"}`; string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
	admitted := false
	_, err = res.Create(context.Background(), "", res.New(), WriteOptions{Admit: func(context.Context, meta.Object, meta.Object) error {
		admitted = true
		return meta.NewForbidden(meta.GroupResource{Resource: "reviews"}, "", errString("no"))
	}})
	if !admitted || !meta.IsForbidden(err) {
		t.Errorf("admission refusal: admitted=%v err=%v", admitted, err)
	}
	if _, err := res.Get(context.Background(), "", "x", meta.GetOptions{}); meta.ReasonForError(err) != meta.StatusReasonMethodNotAllowed {
		t.Errorf("get: %v, want MethodNotAllowed", err)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
