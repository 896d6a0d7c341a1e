package registry_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

func TestCreateFillsSystemMetadata(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	in := widget("", "w1", 3)
	in.UID = "client-uid"
	in.Generation = 7
	in.CreationTimestamp = meta.NewTime(testNow.AddDate(-1, 0, 0))
	in.Status.Ready = true
	out, err := st.Create(ctx, "ns1", in, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := out.GetObjectMeta()
	if _, err := uuid.Parse(m.UID); err != nil || m.UID == "client-uid" {
		t.Errorf("uid = %q, want a server-generated UUID", m.UID)
	}
	if !m.CreationTimestamp.Equal(testNow) {
		t.Errorf("creationTimestamp = %v, want %v", m.CreationTimestamp, testNow)
	}
	if m.Generation != 1 {
		t.Errorf("generation = %d, want 1", m.Generation)
	}
	if m.Namespace != "ns1" {
		t.Errorf("namespace = %q, want the request's ns1", m.Namespace)
	}
	if m.ResourceVersion == "" {
		t.Error("resourceVersion is empty")
	}
	if out.Spec.Color != "blue" {
		t.Errorf("spec.color = %q, want the strategy's default blue", out.Spec.Color)
	}
	if out.Status.Ready {
		t.Error("status.ready survived create; the status subresource owns it")
	}
	got, _, err := st.Get(ctx, "ns1", "w1", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gm := got.GetObjectMeta()
	if gm.UID != m.UID || gm.ResourceVersion != m.ResourceVersion || gm.Generation != 1 || !gm.CreationTimestamp.Equal(testNow) {
		t.Errorf("stored metadata %+v differs from returned %+v", *gm, *m)
	}
	if got.APIVersion != "example.com/v1" || got.Kind != "Widget" {
		t.Errorf("stored object is %s %s, want example.com/v1 Widget", got.APIVersion, got.Kind)
	}
}

func TestCreateGenerateName(t *testing.T) {
	st, _ := newWidgets(t)
	in := widget("ns", "", 1)
	in.GenerateName = "gen-"
	out, err := st.Create(context.Background(), "ns", in, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(out.Name) {
		t.Errorf("generated name %q, want gen- and five characters of kube-apiserver's alphabet", out.Name)
	}
	if out.GenerateName != "gen-" {
		t.Errorf("generateName = %q, want it kept", out.GenerateName)
	}
}

// collidingStorage answers the first failures creates with AlreadyExists, as
// if the generated names were taken.
type collidingStorage struct {
	storage.Interface
	failures atomic.Int32
	keys     []string
}

func (c *collidingStorage) Create(ctx context.Context, key string, value []byte) (int64, error) {
	c.keys = append(c.keys, key)
	if c.failures.Add(-1) >= 0 {
		return 0, storage.NewAlreadyExists(key)
	}
	return c.Interface.Create(ctx, key, value)
}

func TestCreateGenerateNameRetriesCollisions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int32
		wantErr  bool
	}{
		{"one collision", 1, false},
		{"seven collisions", 7, false},
		{"every attempt collides", 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &collidingStorage{Interface: newMemory(t)}
			cs.failures.Store(tc.failures)
			st, err := registry.NewStore(widgetOptions(cs))
			if err != nil {
				t.Fatal(err)
			}
			in := widget("ns", "", 1)
			in.GenerateName = "gen-"
			out, err := st.Create(context.Background(), "ns", in, registry.WriteOptions{})
			if tc.wantErr {
				name := strings.TrimPrefix(cs.keys[len(cs.keys)-1], "/example.com/widgets/ns/")
				st := wantStatus(t, err, 409, meta.StatusReasonAlreadyExists,
					`widgets.example.com "`+name+`" already exists, the server was not able to generate a unique name for the object`)
				if st.Details == nil || st.Details.RetryAfterSeconds != 1 || st.Details.Name != name {
					t.Errorf("details = %+v, want name %s and retryAfterSeconds 1", st.Details, name)
				}
				if len(cs.keys) != 8 {
					t.Errorf("tried %d names, want 8 as kube-apiserver", len(cs.keys))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cs.keys) != int(tc.failures)+1 {
				t.Errorf("tried %d names, want %d", len(cs.keys), tc.failures+1)
			}
			seen := map[string]bool{}
			for _, k := range cs.keys {
				if seen[k] {
					t.Errorf("retried the same key %s", k)
				}
				seen[k] = true
			}
			if !strings.HasSuffix(cs.keys[len(cs.keys)-1], "/"+out.Name) {
				t.Errorf("returned name %s is not the one stored last (%s)", out.Name, cs.keys[len(cs.keys)-1])
			}
		})
	}
}

func TestCreateErrors(t *testing.T) {
	st, _ := newWidgets(t)
	mustCreate(t, st, widget("ns", "taken", 1))
	withRV := widget("ns", "rv", 1)
	withRV.ResourceVersion = "5"
	badName := widget("ns", "Bad_Name", 1)
	noName := widget("ns", "", 1)
	badGenerate := widget("ns", "", 1)
	badGenerate.GenerateName = "Bad-"
	badLabel := widget("ns", "lbl", 1)
	badLabel.Labels = map[string]string{"ok": "not ok!"}
	dupFinalizer := widget("ns", "fin", 1)
	dupFinalizer.Finalizers = []string{"example.com/a", "example.com/a"}

	for _, tc := range []struct {
		name    string
		ns      string
		obj     *Widget
		code    int32
		reason  meta.StatusReason
		message string
		causes  []meta.StatusCause
	}{
		{
			name: "name taken", ns: "ns", obj: widget("ns", "taken", 1),
			code: 409, reason: meta.StatusReasonAlreadyExists, message: `widgets.example.com "taken" already exists`,
		},
		{
			name: "namespace mismatch", ns: "other", obj: widget("ns", "x", 1),
			code: 400, reason: meta.StatusReasonBadRequest,
			message: "the namespace of the provided object does not match the namespace sent on the request",
		},
		{
			name: "resourceVersion set", ns: "ns", obj: withRV,
			code: 400, reason: meta.StatusReasonBadRequest, message: "resourceVersion should not be set on objects to be created",
		},
		{
			name: "strategy validation", ns: "ns", obj: &Widget{ObjectMeta: meta.ObjectMeta{Name: "v"}, Spec: WidgetSpec{Size: 11, Color: "red"}},
			code: 422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "v" is invalid: spec.color: Forbidden: big widgets may not be red`,
			causes:  []meta.StatusCause{{Type: "FieldValueForbidden", Message: "Forbidden: big widgets may not be red", Field: "spec.color"}},
		},
		{
			name: "two strategy errors", ns: "ns", obj: &Widget{ObjectMeta: meta.ObjectMeta{Name: "v"}, Spec: WidgetSpec{Size: -1}},
			code: 422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "v" is invalid: spec.size: Invalid value: -1: must be greater than or equal to 0`,
			causes:  []meta.StatusCause{{Type: "FieldValueInvalid", Message: "Invalid value: -1: must be greater than or equal to 0", Field: "spec.size"}},
		},
		{
			name: "invalid name", ns: "ns", obj: badName,
			code: 422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			causes: []meta.StatusCause{{Type: "FieldValueInvalid", Field: "metadata.name",
				Message: `Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		},
		{
			name: "no name", ns: "ns", obj: noName,
			code: 422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "" is invalid: metadata.name: Required value: name or generateName is required`,
			causes:  []meta.StatusCause{{Type: "FieldValueRequired", Field: "metadata.name", Message: "Required value: name or generateName is required"}},
		},
		{
			name: "invalid label value", ns: "ns", obj: badLabel,
			code: 422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "lbl" is invalid: metadata.labels[ok]: Invalid value: "not ok!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
			causes: []meta.StatusCause{{Type: "FieldValueInvalid", Field: "metadata.labels[ok]",
				Message: `Invalid value: "not ok!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		},
		{
			name: "duplicate finalizer", ns: "ns", obj: dupFinalizer,
			code: 422, reason: meta.StatusReasonInvalid,
			message: `Widget.example.com "fin" is invalid: metadata.finalizers[1]: Duplicate value: "example.com/a"`,
			causes:  []meta.StatusCause{{Type: "FieldValueDuplicate", Field: "metadata.finalizers[1]", Message: `Duplicate value: "example.com/a"`}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := st.Create(context.Background(), tc.ns, tc.obj, registry.WriteOptions{})
			s := wantStatus(t, err, tc.code, tc.reason, tc.message)
			if tc.causes != nil {
				if s.Details == nil || !equalCauses(s.Details.Causes, tc.causes) {
					t.Errorf("causes = %+v\nwant %+v", s.Details, tc.causes)
				}
				if s.Details.Kind != "Widget" || s.Details.Group != "example.com" {
					t.Errorf("details name the kind %s.%s, want Widget.example.com", s.Details.Kind, s.Details.Group)
				}
			}
		})
	}
	// A generated name with an invalid prefix is refused with the
	// generateName field named.
	_, err := st.Create(context.Background(), "ns", badGenerate, registry.WriteOptions{})
	var se *meta.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 422 || !hasCauseField(se.ErrStatus, "metadata.generateName") {
		t.Errorf("bad generateName: %v, want 422 naming metadata.generateName", err)
	}
}

func equalCauses(a, b []meta.StatusCause) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func hasCauseField(st meta.Status, field string) bool {
	if st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Field == field {
			return true
		}
	}
	return false
}

func TestCreateClusterScopedClearsNamespace(t *testing.T) {
	st := newGadgets(t)
	out, err := st.Create(context.Background(), "", &Gadget{ObjectMeta: meta.ObjectMeta{Name: "g", Namespace: "ns"}}, registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Namespace != "" {
		t.Errorf("namespace = %q on a cluster-scoped object", out.Namespace)
	}
	if _, _, err := st.Get(context.Background(), "", "g", meta.GetOptions{}); err != nil {
		t.Errorf("get: %v", err)
	}
}

func TestCreateDryRunPersistsNothing(t *testing.T) {
	st, mem := newWidgets(t)
	ctx := context.Background()
	before, _ := mem.CurrentRevision(ctx)
	out, err := st.Create(ctx, "ns", widget("ns", "dry", 1), registry.WriteOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.UID == "" || out.Generation != 1 || out.Spec.Color != "blue" {
		t.Errorf("dry-run result %+v lacks what a real create fills", out)
	}
	if out.ResourceVersion != "" {
		t.Errorf("dry-run resourceVersion = %q, want none", out.ResourceVersion)
	}
	_, _, err = st.Get(ctx, "ns", "dry", meta.GetOptions{})
	wantStatus(t, err, 404, meta.StatusReasonNotFound, `widgets.example.com "dry" not found`)
	if after, _ := mem.CurrentRevision(ctx); after != before {
		t.Errorf("revision moved from %d to %d on a dry run", before, after)
	}
}

// A dry-run create answers what the create would, a taken name included.
func TestCreateDryRunNameTaken(t *testing.T) {
	st, mem := newWidgets(t)
	ctx := context.Background()
	mustCreate(t, st, widget("ns", "taken", 1))
	before, _ := mem.CurrentRevision(ctx)
	for _, tc := range []struct {
		name   string
		in     *Widget
		code   int32
		reason meta.StatusReason
		msg    string
	}{
		{name: "taken", in: widget("ns", "taken", 2), code: 409, reason: meta.StatusReasonAlreadyExists, msg: `widgets.example.com "taken" already exists`},
		{name: "same name in another namespace", in: widget("other", "taken", 2)},
		{name: "free", in: widget("ns", "free", 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := st.Create(ctx, tc.in.Namespace, tc.in, registry.WriteOptions{DryRun: true})
			if tc.code != 0 {
				wantStatus(t, err, tc.code, tc.reason, tc.msg)
				return
			}
			if err != nil || out.Name != tc.in.Name {
				t.Fatalf("dry-run create: %v %+v", err, out)
			}
		})
	}
	if after, _ := mem.CurrentRevision(ctx); after != before {
		t.Errorf("revision moved from %d to %d on dry runs", before, after)
	}
}

func TestCreateAdmission(t *testing.T) {
	st, _ := newWidgets(t)
	ctx := context.Background()
	rec := &admissionRecorder{}
	opts := registry.WriteOptions{
		Admit: func(_ context.Context, obj, old meta.Object) error {
			rec.record("admit", obj, old)
			w := obj.(*Widget)
			if w.Name != "" || w.UID != "" {
				t.Errorf("mutating admission saw name %q uid %q; it runs before the name is generated", w.Name, w.UID)
			}
			w.Labels = map[string]string{"admitted": "yes"}
			return nil
		},
		Validate: func(_ context.Context, obj, old meta.Object) error {
			rec.record("validate", obj, old)
			w := obj.(*Widget)
			if w.Name == "" || w.UID == "" || w.Spec.Color != "blue" || w.Labels["admitted"] != "yes" {
				t.Errorf("validating admission saw %+v; it runs on the final object", w)
			}
			return nil
		},
	}
	in := widget("ns", "", 1)
	in.GenerateName = "adm-"
	out, err := st.Create(ctx, "ns", in, opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rec.calls, ",") != "admit,validate" {
		t.Errorf("admission calls %v, want admit then validate", rec.calls)
	}
	for i := range rec.olds {
		if rec.olds[i] != nil {
			t.Errorf("%s got old object %v on create", rec.calls[i], rec.olds[i])
		}
	}
	if out.Labels["admitted"] != "yes" {
		t.Errorf("mutation lost: labels %v", out.Labels)
	}

	// Either may refuse, and then nothing is stored.
	refuse := meta.NewForbidden(meta.GroupResource{Group: "example.com", Resource: "widgets"}, "no", errors.New("not today"))
	for _, tc := range []struct {
		name string
		opts registry.WriteOptions
	}{
		{"admit", registry.WriteOptions{Admit: func(context.Context, meta.Object, meta.Object) error { return refuse }}},
		{"validate", registry.WriteOptions{Validate: func(context.Context, meta.Object, meta.Object) error { return refuse }}},
	} {
		t.Run(tc.name+" refuses", func(t *testing.T) {
			_, err := st.Create(ctx, "ns", widget("ns", "no", 1), tc.opts)
			wantStatus(t, err, 403, meta.StatusReasonForbidden, `widgets.example.com "no" is forbidden: not today`)
			_, _, err = st.Get(ctx, "ns", "no", meta.GetOptions{})
			if !meta.IsNotFound(err) {
				t.Errorf("refused object was stored: %v", err)
			}
		})
	}

	// Mutating admission may not move the object to another namespace.
	_, err = st.Create(ctx, "ns", widget("ns", "mover", 1), registry.WriteOptions{
		Admit: func(_ context.Context, obj, _ meta.Object) error {
			obj.GetObjectMeta().Namespace = "elsewhere"
			return nil
		},
	})
	wantStatus(t, err, 400, meta.StatusReasonBadRequest, "the namespace of the provided object does not match the namespace sent on the request")
}

// TestInternalKind: a store whose Options name an internal kind reports it
// in Invalid errors (create and update) and a delete's precondition
// conflicts, as kube-apiserver names the kind its strategy validates
// (events.k8s.io's events are core Events there); other errors keep the
// resource.
func TestInternalKind(t *testing.T) {
	st, _ := newWidgets(t, func(o *registry.Options[*Widget]) { o.InternalKind = meta.GroupKind{Kind: "Gadget"} })
	ctx := context.Background()
	mustCreate(t, st, widget("ns", "w", 1))
	_, errCreate := st.Create(ctx, "ns", widget("ns", "bad", -1), registry.WriteOptions{})
	_, _, errUpdate := st.Update(ctx, "ns", "w", func(_ context.Context, w *Widget) (*Widget, error) {
		w.Spec.Size = -1
		return w, nil
	}, registry.UpdateOptions{})
	uid := "00000000-0000-0000-0000-000000000001"
	_, _, errDelete := st.Delete(ctx, "ns", "w", registry.DeleteOptions{Preconditions: &meta.Preconditions{UID: &uid}})
	_, errExists := st.Create(ctx, "ns", widget("ns", "w", 1), registry.WriteOptions{})
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"create", errCreate, `Gadget "bad" is invalid: spec.size: Invalid value: -1: must be greater than or equal to 0`},
		{"update", errUpdate, `Gadget "w" is invalid: spec.size: Invalid value: -1: must be greater than or equal to 0`},
		{"delete precondition", errDelete, `Operation cannot be fulfilled on Gadget "w": the UID in the precondition (` + uid + `) does not match the UID in record`},
		{"exists", errExists, `widgets.example.com "w" already exists`},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.name, tc.err, tc.want)
		}
	}
	var se *meta.StatusError
	if errors.As(errCreate, &se) && (se.Status().Details.Group != "" || se.Status().Details.Kind != "Gadget") {
		t.Errorf("create: details %+v, want kind Gadget, no group", se.Status().Details)
	}
}
