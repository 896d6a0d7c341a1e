package events

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
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
			`Event "e" is invalid: [reportingController: Required value, reportingController: Invalid value: "": name part must be non-empty, ` +
				`reportingController: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), ` +
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
			`Event.events.k8s.io "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"events.k8s.io: deprecated fields and no type", true, func() *Event {
			e := good("e")
			e.Type, e.Count, e.Source.Host = "", 2, "node1"
			e.FirstTimestamp = meta.Time{Time: now.Time}
			e.Series = &EventSeries{Count: 1}
			return e
		}, `Event.events.k8s.io "e" is invalid: [series.count: Invalid value: "": should be at least 2, series.lastObservedTime: Required value, ` +
			`type: Invalid value: "": has invalid value: , firstTimestamp: Invalid value: "": needs to be unset, count: Invalid value: "": needs to be unset, ` +
			`source: Invalid value: "": needs to be unset]`},
		{"events.k8s.io: an old-style event", true, func() *Event {
			return &Event{ObjectMeta: meta.ObjectMeta{Name: "e"}, Type: "Warning", InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p"}}
		}, `Event.events.k8s.io "e" is invalid: eventTime: Required value`},
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
	// The message says each error once (apimachinery's aggregate); the
	// causes keep kube's list, reason twice.
	want := `Event.events.k8s.io "u" is invalid: [reason: Invalid value: "Other": field is immutable, message: Invalid value: "changed": field is immutable]`
	var se *meta.StatusError
	if !errors.As(err, &se) || err.Error() != want {
		t.Errorf("update through events.k8s.io/v1: %v\nwant %s", err, want)
	} else if n := len(se.Status().Details.Causes); n != 3 {
		t.Errorf("update through events.k8s.io/v1: %d causes, want 3", n)
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
