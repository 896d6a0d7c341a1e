package registry_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// TestValidationOrder checks which errors a write reports at once and in
// which order, as kube-apiserver 1.37 reports them (e2e TestKubeDiff's
// "invalid name and data key" cases): a create reports the strategy's
// errors alone and the metadata's once it passes (rest.BeforeCreate), or,
// with MetadataErrorsFirst, the metadata's first and the strategy's after
// them in one error (kube's own kinds and custom resources); an update
// reports the metadata's, their changes', then the strategy's, in
// apimachinery's order.
func TestValidationOrder(t *testing.T) {
	deleted := meta.Now()
	tests := []struct {
		name       string
		metaFirst  bool
		obj        *Widget
		update     bool
		wantFields []string
	}{
		{name: "create: the strategy's errors alone",
			obj:        &Widget{ObjectMeta: meta.ObjectMeta{Name: "Bad_Name", Labels: map[string]string{"-x": "y"}}, Spec: WidgetSpec{Size: -1}},
			wantFields: []string{"spec.size"}},
		{name: "create: then the metadata's",
			obj:        &Widget{ObjectMeta: meta.ObjectMeta{Name: "Bad_Name", Labels: map[string]string{"-x": "y"}}, Spec: WidgetSpec{Size: 1}},
			wantFields: []string{"metadata.name", "metadata.labels"}},
		{name: "create, metadata first: both at once", metaFirst: true,
			obj:        &Widget{ObjectMeta: meta.ObjectMeta{Name: "Bad_Name", Labels: map[string]string{"-x": "y"}}, Spec: WidgetSpec{Size: -1}},
			wantFields: []string{"metadata.name", "metadata.labels", "spec.size"}},
		{name: "create: owners, then finalizers", metaFirst: true,
			obj: &Widget{ObjectMeta: meta.ObjectMeta{Name: "w2", Finalizers: []string{"bad/finalizer/x"},
				OwnerReferences: []meta.OwnerReference{{Kind: "Thing", Name: "t", UID: "u"}}}},
			wantFields: []string{"metadata.ownerReferences[0].apiVersion", "metadata.finalizers[0]"}},
		{name: "update: the metadata, its changes, the strategy", update: true,
			obj: &Widget{ObjectMeta: meta.ObjectMeta{Name: "w1", Labels: map[string]string{"-x": "y"}, DeletionTimestamp: &deleted},
				Spec: WidgetSpec{Size: -1}},
			wantFields: []string{"metadata.labels", "metadata.deletionTimestamp", "spec.size"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := newWidgets(t, func(o *registry.Options[*Widget]) { o.MetadataErrorsFirst = tt.metaFirst })
			ctx := context.Background()
			var err error
			if tt.update {
				cur := mustCreate(t, st, widget("ns", "w1", 1))
				tt.obj.Namespace = "ns"
				tt.obj.ResourceVersion = cur.ResourceVersion
				tt.obj.UID = cur.UID
				_, _, err = st.Update(ctx, "ns", "w1", replace(tt.obj), registry.UpdateOptions{})
			} else {
				tt.obj.Namespace = "ns"
				_, err = st.Create(ctx, "ns", tt.obj, registry.WriteOptions{})
			}
			var se *meta.StatusError
			if !errors.As(err, &se) || se.ErrStatus.Code != 422 || se.ErrStatus.Details == nil {
				t.Fatalf("error %v, want a 422 with causes", err)
			}
			var got []string
			for _, c := range se.ErrStatus.Details.Causes {
				got = append(got, c.Field)
			}
			if !slices.Equal(got, tt.wantFields) {
				t.Errorf("causes' fields = %q, want %q", got, tt.wantFields)
			}
		})
	}
}
