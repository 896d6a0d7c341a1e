package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

func TestUpdateErrors(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	cur := mustCreate(t, st, widget("ns", "w", 1))
	later := meta.NewTime(testNow.Add(time.Hour))

	for _, tc := range []struct {
		name    string
		ns, obj string
		change  func(w *Widget)
		code    int32
		reason  meta.StatusReason
		message string
		field   string
		// bodyUID makes the uid of the changed object a precondition, as a
		// PUT does.
		bodyUID bool
	}{
		{
			name: "stale resourceVersion", ns: "ns", obj: "w",
			change: func(w *Widget) { w.ResourceVersion = "1" },
			code:   409, reason: meta.StatusReasonConflict,
			message: `Operation cannot be fulfilled on widgets.example.com "w": the object has been modified; please apply your changes to the latest version and try again`,
		},
		{
			name: "no resourceVersion", ns: "ns", obj: "w",
			change: func(w *Widget) { w.ResourceVersion = "" },
			code:   422, reason: meta.StatusReasonInvalid,
			// kube-apiserver names the resource, not the kind, here.
			message: `widgets.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`,
			field:   "metadata.resourceVersion",
		},
		{
			name: "name mismatch", ns: "ns", obj: "w",
			change: func(w *Widget) { w.Name = "other" },
			code:   400, reason: meta.StatusReasonBadRequest,
			message: "the name of the object (other) does not match the name on the URL (w)",
		},
		{
			name: "namespace mismatch", ns: "ns", obj: "w",
			change: func(w *Widget) { w.Namespace = "other" },
			code:   400, reason: meta.StatusReasonBadRequest,
			message: "the namespace of the provided object does not match the namespace sent on the request",
		},
		{
			name: "uid changed", ns: "ns", obj: "w",
			change: func(w *Widget) { w.UID = "someone-else" },
			code:   422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "w" is invalid: metadata.uid: Invalid value: "someone-else": field is immutable`,
			field:   "metadata.uid",
		},
		{
			// kube-apiserver checks a PUT body's uid as a storage
			// precondition, before validation.
			name: "uid of another object in a PUT", ns: "ns", obj: "w", bodyUID: true,
			change: func(w *Widget) { w.UID = "someone-else" },
			code:   409, reason: meta.StatusReasonConflict,
			message: `Operation cannot be fulfilled on widgets.example.com "w": Precondition failed: UID in precondition: someone-else, UID in object meta: ` + cur.UID,
		},
		{
			name: "deletionTimestamp set", ns: "ns", obj: "w",
			change: func(w *Widget) { w.DeletionTimestamp = &later },
			code:   422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "w" is invalid: metadata.deletionTimestamp: Invalid value: "2024-05-06T08:08:09Z": field is immutable`,
			field:   "metadata.deletionTimestamp",
		},
		{
			name: "strategy validation", ns: "ns", obj: "w",
			change: func(w *Widget) { w.Spec.Size = -2 },
			code:   422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "w" is invalid: spec.size: Invalid value: -2: must be greater than or equal to 0`,
			field:   "spec.size",
		},
		{
			name: "missing object", ns: "ns", obj: "nope",
			change: func(w *Widget) { w.Name = "nope" },
			code:   404, reason: meta.StatusReasonNotFound,
			message: `widgets.example.com "nope" not found`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := *cur
			w.ObjectMeta = cur.ObjectMeta // no maps or slices to share here
			tc.change(&w)
			var opts registry.UpdateOptions
			if tc.bodyUID {
				uid := w.UID
				opts.Preconditions = &meta.Preconditions{UID: &uid}
			}
			_, _, err := st.Update(ctx, tc.ns, tc.obj, replace(&w), opts)
			s := wantStatus(t, err, tc.code, tc.reason, tc.message)
			if tc.field != "" && !hasCauseField(s, tc.field) {
				t.Errorf("causes %+v do not name %s", s.Details, tc.field)
			}
			got, _, err := st.Get(ctx, "ns", "w", meta.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.ResourceVersion != cur.ResourceVersion {
				t.Errorf("a refused update changed the object: resourceVersion %s -> %s", cur.ResourceVersion, got.ResourceVersion)
			}
		})
	}
}

func TestUpdateCarriesOverSystemFields(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	cur := mustCreate(t, st, widget("ns", "w", 1))
	w := *cur
	w.ObjectMeta = cur.ObjectMeta // no maps or slices to share here
	// Like kube-apiserver, an update silently keeps the creation time and
	// fills a missing uid; clients that send an object back without them
	// (kubectl replace of a file) are not refused.
	w.CreationTimestamp = meta.NewTime(testNow.Add(-time.Hour))
	w.UID = ""
	w.Generation = 42
	w.Labels = map[string]string{"a": "b"}
	out, created, err := st.Update(ctx, "ns", "w", replace(&w), registry.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created {
		t.Error("created = true on an update")
	}
	if !out.CreationTimestamp.Equal(cur.CreationTimestamp.Time) || out.UID != cur.UID || out.Generation != 1 {
		t.Errorf("update changed system fields: %+v", out.ObjectMeta)
	}
	if out.Labels["a"] != "b" || out.ResourceVersion == cur.ResourceVersion {
		t.Errorf("update not applied: %+v", out.ObjectMeta)
	}
}

func TestUpdateGeneration(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	mustCreate(t, st, widget("ns", "w", 1))
	for _, tc := range []struct {
		name     string
		change   func(*Widget)
		wantGen  int64
		wantSize int
		ready    bool
	}{
		{"labels only", func(w *Widget) { w.Labels = map[string]string{"x": "y"} }, 1, 1, false},
		{"annotations only", func(w *Widget) { w.Annotations = map[string]string{"x": "y"} }, 1, 1, false},
		{"spec change", func(w *Widget) { w.Spec.Size = 2 }, 2, 2, false},
		{"no change at all", func(*Widget) {}, 2, 2, false},
		// Status is the subresource's: the main resource ignores it.
		{"status through the main resource", func(w *Widget) { w.Status.Ready = true }, 2, 2, false},
		{"spec again", func(w *Widget) { w.Spec.Size = 3 }, 3, 3, false},
		// Empty and absent lists and maps are the same spec, as in
		// Kubernetes' semantic equality: a client that sends "tags": []
		// for a stored object without tags changed nothing.
		{"empty list for none", func(w *Widget) { w.Spec.Tags = []string{} }, 3, 3, false},
		{"empty map for none", func(w *Widget) { w.Spec.Extra = map[string]string{} }, 3, 3, false},
		{"a time set", func(w *Widget) { t := meta.NewTime(testNow); w.Spec.Since = &t }, 4, 3, false},
		{"the same time in another zone", func(w *Widget) {
			t := meta.NewTime(testNow.In(time.FixedZone("x", 3600)))
			w.Spec.Since = &t
		}, 4, 3, false},
		{"a list item", func(w *Widget) { w.Spec.Tags = []string{"a"} }, 5, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := st.Update(ctx, "ns", "w", edit(tc.change), registry.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Generation != tc.wantGen || out.Spec.Size != tc.wantSize || out.Status.Ready != tc.ready {
				t.Errorf("generation %d size %d ready %v, want %d %d %v", out.Generation, out.Spec.Size, out.Status.Ready, tc.wantGen, tc.wantSize, tc.ready)
			}
			got, _, _ := st.Get(ctx, "ns", "w", meta.GetOptions{})
			if got.Generation != tc.wantGen || got.Status.Ready != tc.ready {
				t.Errorf("stored generation %d ready %v, want %d %v", got.Generation, got.Status.Ready, tc.wantGen, tc.ready)
			}
		})
	}
}

func TestUpdateStatusSubresource(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	cur := mustCreate(t, st, widget("ns", "w", 1))
	out, _, err := st.Update(ctx, "ns", "w", edit(func(w *Widget) {
		w.Status = WidgetStatus{Ready: true, ObservedGeneration: 1}
		w.Spec.Size = 99
		w.Labels = map[string]string{"sneaky": "yes"}
		w.Finalizers = []string{"example.com/f"}
	}), registry.UpdateOptions{Subresource: "status"})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Status.Ready || out.Status.ObservedGeneration != 1 {
		t.Errorf("status not applied: %+v", out.Status)
	}
	if out.Spec.Size != 1 || out.Labels != nil || out.Finalizers != nil {
		t.Errorf("status update changed spec or metadata: size %d labels %v finalizers %v", out.Spec.Size, out.Labels, out.Finalizers)
	}
	if out.Generation != cur.Generation {
		t.Errorf("status update bumped generation to %d", out.Generation)
	}
	got, _, _ := st.Get(ctx, "ns", "w", meta.GetOptions{})
	if !got.Status.Ready || got.Spec.Size != 1 || got.Labels != nil {
		t.Errorf("stored %+v, want only the status changed", got)
	}

	// The status strategy validates status updates; the main strategy's
	// ValidateUpdate does not run (it would refuse nothing here anyway).
	_, _, err = st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Status.ObservedGeneration = -1 }), registry.UpdateOptions{Subresource: "status"})
	wantStatus(t, err, 422, meta.StatusReasonInvalid, `Widget.example.com "w" is invalid: status.observedGeneration: Invalid value: -1: must be greater than or equal to 0`)

	// The status subresource never creates.
	_, _, err = st.Update(ctx, "ns", "missing", replace(widget("ns", "missing", 1)), registry.UpdateOptions{Subresource: "status"})
	wantStatus(t, err, 404, meta.StatusReasonNotFound, `widgets.example.com "missing" not found`)
}

func TestUpdateCreateOnUpdate(t *testing.T) {
	st, _ := newWidgets(t, func(o *registry.Options[*Widget]) { o.AllowCreateOnUpdate = true })
	ctx := context.Background()
	out, created, err := st.Update(ctx, "ns", "new", func(_ context.Context, cur *Widget) (*Widget, error) {
		if cur != nil {
			t.Errorf("current = %v for a missing object, want nil", cur)
		}
		return widget("", "", 4), nil
	}, registry.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !created || out.Name != "new" || out.Namespace != "ns" || out.UID == "" || out.Generation != 1 || out.ResourceVersion == "" {
		t.Errorf("create on update: created=%v %+v", created, out.ObjectMeta)
	}
	if _, _, err := st.Get(ctx, "ns", "new", meta.GetOptions{}); err != nil {
		t.Error(err)
	}
}

// The uid precondition of a PUT that would create the object is checked
// against no object, as kube-apiserver's storage checks it.
func TestUpdateCreateOnUpdateUIDPrecondition(t *testing.T) {
	st, _ := newWidgets(t, func(o *registry.Options[*Widget]) { o.AllowCreateOnUpdate = true })
	ctx := context.Background()
	in := widget("ns", "new", 4)
	in.UID = "stale"
	uid := in.UID
	_, _, err := st.Update(ctx, "ns", "new", replace(in), registry.UpdateOptions{Preconditions: &meta.Preconditions{UID: &uid}})
	wantStatus(t, err, 409, meta.StatusReasonConflict,
		`Operation cannot be fulfilled on widgets.example.com "new": Precondition failed: UID in precondition: stale, UID in object meta: `)
	_, _, err = st.Get(ctx, "ns", "new", meta.GetOptions{})
	wantStatus(t, err, 404, meta.StatusReasonNotFound, `widgets.example.com "new" not found`)
}

func TestUpdateUnconditional(t *testing.T) {
	st, _ := newWidgets(t, func(o *registry.Options[*Widget]) { o.AllowUnconditionalUpdate = true })
	ctx := context.Background()
	mustCreate(t, st, widget("ns", "w", 1))
	out, _, err := st.Update(ctx, "ns", "w", replace(widget("ns", "w", 5)), registry.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Size != 5 || out.Generation != 2 {
		t.Errorf("unconditional update: %+v", out)
	}
}

func TestUpdateDryRunPersistsNothing(t *testing.T) {
	st, mem := newWidgets(t)
	ctx := context.Background()
	cur := mustCreate(t, st, widget("ns", "w", 1))
	before, _ := mem.CurrentRevision(ctx)
	out, _, err := st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Spec.Size = 9 }), registry.UpdateOptions{WriteOptions: registry.WriteOptions{DryRun: true}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Size != 9 || out.Generation != 2 {
		t.Errorf("dry-run result %+v, want the update applied", out)
	}
	got, _, _ := st.Get(ctx, "ns", "w", meta.GetOptions{})
	if got.Spec.Size != 1 || got.ResourceVersion != cur.ResourceVersion {
		t.Errorf("dry run persisted: %+v", got)
	}
	if after, _ := mem.CurrentRevision(ctx); after != before {
		t.Errorf("revision moved from %d to %d on a dry run", before, after)
	}
	// A dry run still checks the resourceVersion.
	w := *out
	w.ResourceVersion = "1"
	_, _, err = st.Update(ctx, "ns", "w", replace(&w), registry.UpdateOptions{WriteOptions: registry.WriteOptions{DryRun: true}})
	if !meta.IsConflict(err) {
		t.Errorf("dry run with a stale resourceVersion: %v, want Conflict", err)
	}
}

func TestUpdateAdmission(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	mustCreate(t, st, widget("ns", "w", 1))
	rec := &admissionRecorder{}
	out, _, err := st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Spec.Size = 2 }), registry.UpdateOptions{WriteOptions: registry.WriteOptions{
		Admit: func(_ context.Context, obj, old meta.Object) error {
			rec.record("admit", obj, old)
			obj.(*Widget).Spec.Color = "green"
			return nil
		},
		Validate: func(_ context.Context, obj, old meta.Object) error {
			rec.record("validate", obj, old)
			return nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rec.calls, ",") != "admit,validate" {
		t.Fatalf("calls %v", rec.calls)
	}
	for i, call := range rec.calls {
		obj, old := rec.objs[i].(*Widget), rec.olds[i].(*Widget)
		if obj.Spec.Size != 2 || old.Spec.Size != 1 {
			t.Errorf("%s saw new size %d old size %d, want 2 and 1", call, obj.Spec.Size, old.Spec.Size)
		}
	}
	if v := rec.objs[1].(*Widget); v.Spec.Color != "green" || v.Generation != 2 {
		t.Errorf("validating admission saw %+v; want the mutated, final object", v)
	}
	if out.Spec.Color != "green" {
		t.Errorf("mutation lost: %+v", out.Spec)
	}
	_, _, err = st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Spec.Size = 3 }), registry.UpdateOptions{WriteOptions: registry.WriteOptions{
		Validate: func(context.Context, meta.Object, meta.Object) error { return errors.New("plain error") },
	}})
	if err == nil {
		t.Fatal("validating admission refusal ignored")
	}
	if got, _, _ := st.Get(ctx, "ns", "w", meta.GetOptions{}); got.Spec.Size != 2 {
		t.Errorf("refused update stored: size %d", got.Spec.Size)
	}
}

// The update function is retried on a write race with the newer object.
func TestUpdateRetriesOnRace(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	mustCreate(t, st, widget("ns", "w", 1))
	calls := 0
	out, _, err := st.Update(ctx, "ns", "w", func(ctx context.Context, cur *Widget) (*Widget, error) {
		calls++
		if calls == 1 {
			// Someone else writes between our read and our write.
			if _, _, err := st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Labels = map[string]string{"racer": "1"} }), registry.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		cur.Spec.Size++
		return cur, nil
	}, registry.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || out.Spec.Size != 2 || out.Labels["racer"] != "1" {
		t.Errorf("calls %d, result %+v: want a retry on the racer's object", calls, out)
	}
}

// TestNoGeneration: a kind without a generation (kube's configmaps,
// secrets, namespaces) never gets one, through create, a spec change and
// a graceful deletion.
func TestNoGeneration(t *testing.T) {
	st, _ := newWidgets(t, func(o *registry.Options[*Widget]) { o.NoGeneration = true })
	ctx := context.Background()
	in := widget("ns", "w", 1)
	in.Generation = 7
	in.Finalizers = []string{"example.com/hold"}
	steps := []struct {
		name string
		do   func() (*Widget, error)
	}{
		{"create", func() (*Widget, error) { return st.Create(ctx, "ns", in, registry.WriteOptions{}) }},
		{"spec change", func() (*Widget, error) {
			out, _, err := st.Update(ctx, "ns", "w", edit(func(w *Widget) { w.Spec.Size = 2 }), registry.UpdateOptions{})
			return out, err
		}},
		{"graceful deletion", func() (*Widget, error) {
			out, _, err := st.Delete(ctx, "ns", "w", registry.DeleteOptions{})
			return out, err
		}},
	}
	for _, s := range steps {
		out, err := s.do()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if out.Generation != 0 {
			t.Errorf("%s: generation = %d, want none", s.name, out.Generation)
		}
	}
}
