package events

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/schema"
	"github.com/apikit-dev/apikit/storage"
	"github.com/apikit-dev/apikit/storage/memory"
)

func newStores(t *testing.T) *Stores {
	t.Helper()
	mem := memory.New()
	t.Cleanup(func() { _ = mem.Close() })
	s, err := New(storage.Shared(mem))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValidation(t *testing.T) {
	now := meta.MicroTime{Time: time.Now()}
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"old style", Event{InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}, Reason: "Started"}, ""},
		{"old style, other namespace", Event{InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "other", Name: "p"}},
			`Event "e" is invalid: involvedObject.namespace: Invalid value: "other": does not match event.namespace`},
		{"new style", Event{EventTime: now, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"},
			ReportingController: "example.com/ctl", ReportingInstance: "ctl-1", Action: "Reconcile", Reason: "Done"}, ""},
		{"new style, missing fields", Event{EventTime: now, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}},
			`Event "e" is invalid: [reportingComponent: Required value, reportingComponent: Invalid value: "": name part must be non-empty, ` +
				`reportingComponent: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), ` +
				`reportingInstance: Required value, action: Required value, reason: Required value]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.ev
			ev.Name = "e"
			_, err := newStores(t).Core.Create(context.Background(), "ns", &ev, registry.WriteOptions{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("create: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("create: %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestOneStorage: an event written through events.k8s.io/v1 is the core
// Event with its fields renamed, and back.
func TestOneStorage(t *testing.T) {
	s := newStores(t)
	ctx := context.Background()
	v1 := &EventV1{ObjectMeta: meta.ObjectMeta{Name: "e"}, EventTime: meta.MicroTime{Time: time.Now()},
		ReportingController: "example.com/ctl", ReportingInstance: "i", Action: "A", Reason: "R", Note: "hello",
		Regarding: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}, Type: "Normal"}
	stored, err := ConversionV1.ToStorage(v1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Events.Create(ctx, "ns", stored, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	core, _, err := s.Core.Get(ctx, "ns", "e", meta.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if core.Message != "hello" || core.InvolvedObject.Name != "p" || core.ReportingController != "example.com/ctl" || core.APIVersion != "v1" {
		t.Errorf("core view %+v", core)
	}
	back, err := ConversionV1.FromStorage(core)
	if err != nil || back.Note != "hello" || back.Regarding.Name != "p" {
		t.Errorf("events.k8s.io view %+v %v", back, err)
	}
}

// TestSweep: events older than the TTL (by their last activity) go, others
// stay.
func TestSweep(t *testing.T) {
	s := newStores(t)
	ctx := context.Background()
	now := time.Now()
	for name, last := range map[string]time.Time{"old": now.Add(-2 * time.Hour), "recent": now.Add(-10 * time.Minute)} {
		ev := &Event{ObjectMeta: meta.ObjectMeta{Name: name}, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"},
			LastTimestamp: meta.Time{Time: last}}
		if _, err := s.Core.Create(ctx, "ns", ev, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Created just now, the old one is still new by its creation: sweep
	// as if two hours had passed since.
	if err := sweep(ctx, s.Core, time.Hour, now.Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Core.Get(ctx, "ns", "old", meta.GetOptions{}); !meta.IsNotFound(err) {
		t.Errorf("old event: %v, want NotFound", err)
	}
	if _, _, err := s.Core.Get(ctx, "ns", "recent", meta.GetOptions{}); !meta.IsNotFound(err) {
		t.Errorf("recent event after its TTL: %v, want NotFound", err)
	}
	keep := &Event{ObjectMeta: meta.ObjectMeta{Name: "fresh"}, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}}
	if _, err := s.Core.Create(ctx, "ns", keep, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sweep(ctx, s.Core, time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Core.Get(ctx, "ns", "fresh", meta.GetOptions{}); err != nil {
		t.Errorf("fresh event: %v", err)
	}
}

// TestValidationByAPI: kube-apiserver checks a core v1 event's name only
// as a path segment, and validates a write through events.k8s.io/v1
// strictly (ValidateEventCreate and ValidateEventUpdate for that version).
func TestValidationByAPI(t *testing.T) {
	now := meta.MicroTime{Time: time.Now()}
	good := func(name string) *Event {
		return &Event{ObjectMeta: meta.ObjectMeta{Name: name}, EventTime: now, Type: "Normal",
			InvolvedObject:      ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"},
			ReportingController: "example.com/ctl", ReportingInstance: "ctl-1", Action: "Reconcile", Reason: "Done"}
	}
	tests := []struct {
		name   string
		strict bool
		ev     func() *Event
		want   string
	}{
		{"core: a name that is no subdomain", false, func() *Event {
			return &Event{ObjectMeta: meta.ObjectMeta{Name: "Bad_Name"}, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}}
		}, ""},
		{"core: a name with a slash", false, func() *Event {
			return &Event{ObjectMeta: meta.ObjectMeta{Name: "a/b"}, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}}
		}, `Event "a/b" is invalid: metadata.name: Invalid value: "a/b": may not contain '/'`},
		{"core: an old-style event with deprecated fields", false, func() *Event {
			return &Event{ObjectMeta: meta.ObjectMeta{Name: "e"}, Count: 3, Source: EventSource{Component: "kubelet"},
				InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}}
		}, ""},
		{"events.k8s.io: a good event", true, func() *Event { return good("e") }, ""},
		{"events.k8s.io: a name that is no subdomain", true, func() *Event { return good("Bad_Name") },
			`Event "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"events.k8s.io: deprecated fields and no type", true, func() *Event {
			e := good("e")
			e.Type, e.Count, e.Source.Host = "", 2, "node1"
			e.FirstTimestamp = meta.Time{Time: now.Time}
			e.Series = &EventSeries{Count: 1}
			return e
		}, `Event "e" is invalid: [series.count: Invalid value: "": should be at least 2, series.lastObservedTime: Required value, ` +
			`type: Invalid value: "": has invalid value: , firstTimestamp: Invalid value: "": needs to be unset, count: Invalid value: "": needs to be unset, ` +
			`source: Invalid value: "": needs to be unset]`},
		// kube names the field as the request's version does.
		{"events.k8s.io: no reporting controller", true, func() *Event {
			e := good("e")
			e.ReportingController = ""
			return e
		}, `Event "e" is invalid: [reportingController: Required value, reportingController: Invalid value: "": name part must be non-empty, ` +
			`reportingController: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]`},
		{"events.k8s.io: an old-style event", true, func() *Event {
			return &Event{ObjectMeta: meta.ObjectMeta{Name: "e"}, Type: "Warning", InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}}
		}, `Event "e" is invalid: eventTime: Required value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStores(t)
			st := s.Core
			if tt.strict {
				st = s.Events
			}
			_, err := st.Create(context.Background(), "ns", tt.ev(), registry.WriteOptions{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("create: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Fatalf("create: %v\nwant %s", err, tt.want)
			}
		})
	}

	// Updates: through core v1 anything legacy validation allows; through
	// events.k8s.io/v1 the event's fields are immutable.
	s := newStores(t)
	ctx := context.Background()
	if _, err := s.Events.Create(ctx, "ns", good("u"), registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	change := func(_ context.Context, e *Event) (*Event, error) {
		e.Reason, e.Message = "Other", "changed"
		return e, nil
	}
	_, _, err := s.Events.Update(ctx, "ns", "u", change, registry.UpdateOptions{})
	// kube's list names reason twice; its declarative-validation pass
	// keeps each error once, in the message and the causes. The kind is
	// the internal object's, core's Event.
	want := `Event "u" is invalid: [reason: Invalid value: "Other": field is immutable, message: Invalid value: "changed": field is immutable]`
	var se *meta.StatusError
	if !errors.As(err, &se) || err.Error() != want {
		t.Errorf("update through events.k8s.io/v1: %v\nwant %s", err, want)
	} else if d := se.Status().Details; len(d.Causes) != 2 || d.Group != "" || d.Kind != "Event" {
		t.Errorf("update through events.k8s.io/v1: details %+v, want 2 causes of kind Event, no group", d)
	}
	if _, _, err := s.Core.Update(ctx, "ns", "u", change, registry.UpdateOptions{}); err != nil {
		t.Errorf("update through core v1: %v", err)
	}
	series := func(_ context.Context, e *Event) (*Event, error) {
		e.Series = &EventSeries{Count: 2, LastObservedTime: meta.MicroTime{Time: time.Now()}}
		return e, nil
	}
	if _, _, err := s.Events.Update(ctx, "ns", "u", series, registry.UpdateOptions{}); err != nil {
		t.Errorf("a series through events.k8s.io/v1: %v", err)
	}
}

// TestFieldSelectors: each API selects on its own names for the same
// fields (involvedObject.* and reportingComponent in core/v1, regarding.*
// and reportingController in events.k8s.io/v1) and refuses the other's;
// core/v1's source is the reporting controller of an event without one.
func TestFieldSelectors(t *testing.T) {
	s := newStores(t)
	ctx := context.Background()
	old := &Event{ObjectMeta: meta.ObjectMeta{Name: "old"}, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"},
		Reason: "Started", Type: "Normal", Source: EventSource{Component: "kubelet"}}
	recent := &Event{ObjectMeta: meta.ObjectMeta{Name: "new"}, EventTime: meta.MicroTime{Time: time.Now()}, Type: "Warning",
		InvolvedObject:      ObjectReference{Kind: "Pod", Namespace: "ns", Name: "q"},
		ReportingController: "example.com/ctl", ReportingInstance: "ctl-1", Action: "Reconcile", Reason: "Done"}
	for _, e := range []*Event{old, recent} {
		if _, err := s.Core.Create(ctx, "ns", e, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		selector string
		strict   bool
		want     string // the names selected, or the error
	}{
		{"involvedObject.name=p", false, "old"},
		{"source=kubelet", false, "old"},
		{"source=example.com/ctl", false, "new"},
		{"reportingComponent=example.com/ctl", false, "new"},
		{"reason=Done,type=Warning", false, "new"},
		{"metadata.name!=old", false, "new"},
		{"regarding.name=p", false, "field label not supported: regarding.name"},
		{"reportingController=example.com/ctl", false, "field label not supported: reportingController"},
		{"regarding.name=p", true, "old"},
		{"regarding.kind=Pod,type=Warning", true, "new"},
		{"reportingController=example.com/ctl", true, "new"},
		{"reason=Started", true, "old"},
		{"involvedObject.name=p", true, "field label not supported: involvedObject.name"},
		{"source=kubelet", true, "field label not supported: source"},
		{"reportingComponent=example.com/ctl", true, "field label not supported: reportingComponent"},
	}
	for _, tt := range tests {
		st := s.Core
		if tt.strict {
			st = s.Events
		}
		res, err := st.List(ctx, "ns", meta.ListOptions{FieldSelector: tt.selector})
		var got string
		if err != nil {
			got = err.Error()
		} else {
			for _, it := range res.Items {
				got += it.Object.Name
			}
		}
		if got != tt.want {
			t.Errorf("%s (events.k8s.io: %v): %q, want %q", tt.selector, tt.strict, got, tt.want)
		}
	}
}

// TestCreateOnUpdate: a PUT of a missing event creates it through either
// API, with that API's create validation.
func TestCreateOnUpdate(t *testing.T) {
	s := newStores(t)
	ctx := context.Background()
	put := func(e *Event) UpdateFuncFor { return func(context.Context, *Event) (*Event, error) { return e, nil } }
	oldStyle := &Event{ObjectMeta: meta.ObjectMeta{Name: "a"}, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}}
	if _, created, err := s.Core.Update(ctx, "ns", "a", put(oldStyle), registry.UpdateOptions{}); err != nil || !created {
		t.Errorf("core v1 PUT of a missing event: created %v, %v", created, err)
	}
	strict := &Event{ObjectMeta: meta.ObjectMeta{Name: "b"}, EventTime: meta.MicroTime{Time: time.Now()}, Type: "Normal",
		InvolvedObject:      ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"},
		ReportingController: "example.com/ctl", ReportingInstance: "ctl-1", Action: "Reconcile", Reason: "Done"}
	if _, created, err := s.Events.Update(ctx, "ns", "b", put(strict), registry.UpdateOptions{}); err != nil || !created {
		t.Errorf("events.k8s.io/v1 PUT of a missing event: created %v, %v", created, err)
	}
	bogus := *strict
	bogus.Name, bogus.Type = "c", "Bogus"
	want := `Event "c" is invalid: type: Invalid value: "": has invalid value: Bogus`
	if _, _, err := s.Events.Update(ctx, "ns", "c", put(&bogus), registry.UpdateOptions{}); err == nil || err.Error() != want {
		t.Errorf("events.k8s.io/v1 PUT of a missing invalid event: %v, want %s", err, want)
	}
}

// UpdateFuncFor is the update function of events' stores.
type UpdateFuncFor = registry.UpdateFunc[*Event]

// TestTable: the cells of kube-apiserver's events table (ages aside),
// for an old-style event, an events.k8s.io/v1 one with a series, and one
// about no named object.
func TestTable(t *testing.T) {
	day := meta.Time{Time: time.Now().Add(-48*time.Hour - time.Minute)}
	tests := []struct {
		name string
		ev   Event
		want []any // TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE COUNT NAME; the times as LAST SEEN and FIRST SEEN
	}{
		{"old style", Event{ObjectMeta: meta.ObjectMeta{Name: "e1"}, Type: "Normal", Reason: "Created", Message: " made  ",
			InvolvedObject: ObjectReference{Kind: "ConfigMap", Name: "c1", FieldPath: "data"}, Source: EventSource{Component: "kubelet", Host: "node-1"},
			Count: 3, FirstTimestamp: day},
			[]any{"Normal", "Created", "configmap/c1", "data", "kubelet, node-1", "made", int64(3), "e1", "2d", "2d"}},
		{"events.k8s.io with a series", Event{ObjectMeta: meta.ObjectMeta{Name: "e2"}, Type: "Warning", Reason: "Synced",
			InvolvedObject: ObjectReference{Kind: "Pod", Name: "p"}, ReportingController: "example.com/ctl", ReportingInstance: "ctl-1",
			EventTime: meta.MicroTime{Time: day.Time}, Series: &EventSeries{Count: 4}},
			[]any{"Warning", "Synced", "pod/p", "", "example.com/ctl, ctl-1", "", int64(4), "e2", "<unknown>", "2d"}},
		{"about no named object, a singleton", Event{ObjectMeta: meta.ObjectMeta{Name: "e3"}, Reason: "Orphan",
			InvolvedObject: ObjectReference{Kind: "Node"}, ReportingController: "example.com/ctl"},
			[]any{"", "Orphan", "node", "", "example.com/ctl", "", int64(1), "e3", "<unknown>", "<unknown>"}},
	}
	index := map[string]int{}
	for i, c := range columns {
		index[c.Name] = i
	}
	for _, tt := range tests {
		cell := func(name string) any { return columns[index[name]].Value(&tt.ev) }
		got := []any{cell("Type"), cell("Reason"), cell("Object"), cell("Subobject"), cell("Source"), cell("Message"),
			cell("Count"), cell("Name"), cell("Last Seen"), cell("First Seen")}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: cells %#v\nwant %#v", tt.name, got, tt.want)
		}
	}
	if d := columns[index["Last Seen"]].Description; d != (Event{}).SwaggerDoc()["lastTimestamp"] {
		t.Errorf("Last Seen described as %q, want lastTimestamp's description", d)
	}
	if c := columns[index["Name"]]; c.Format != "name" || c.Priority != 1 {
		t.Errorf("Name column %+v, want format name, priority 1", c)
	}
}

// TestNamespaceChecks: kube-apiserver 1.37's event validation leaves the
// namespace to the generic metadata check (metadata.namespace, once the
// event's own checks pass); it has no namespace error of its own.
func TestNamespaceChecks(t *testing.T) {
	ev := &Event{ObjectMeta: meta.ObjectMeta{Name: "e"}, InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "Bad_NS", Name: "p"}}
	if errs := Validate(&Event{ObjectMeta: meta.ObjectMeta{Name: "e", Namespace: "Bad_NS"}, InvolvedObject: ev.InvolvedObject}); len(errs) != 0 {
		t.Errorf("Validate: %v, want no errors", errs)
	}
	_, err := newStores(t).Core.Create(context.Background(), "Bad_NS", ev, registry.WriteOptions{})
	want := `Event "e" is invalid: metadata.namespace: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	if err == nil || err.Error() != want {
		t.Errorf("create in Bad_NS: %v\nwant %s", err, want)
	}
}

// TestReferencesAtomic: involvedObject (regarding) and related are core/v1
// ObjectReferences, atomic in kube's schema (+structType=atomic): apply
// owns them whole, and managedFields list "f:involvedObject": {}.
func TestReferencesAtomic(t *testing.T) {
	set := schema.NewSet()
	if _, err := set.AddType(reflect.TypeOf(EventV1{})); err != nil {
		t.Fatal(err)
	}
	ref, ok := set.Named(schema.Key(reflect.TypeOf(ObjectReference{})))
	if !ok || ref.MapType != schema.MapAtomic {
		t.Errorf("ObjectReference's schema %+v, want MapType atomic", ref)
	}
}
