// Package events serves events twice over one storage, as kube-apiserver
// does: core/v1 Events (/api/v1/namespaces/{namespace}/events) and
// events.k8s.io/v1 Events, stored as core v1 Events under the same keys,
// so that a watch of either sees the writes of both. Events expire TTL
// after their last activity (Expirer, the server's --event-ttl).
package events

import (
	"context"
	"fmt"
	"reflect"

	"github.com/apikit-dev/apikit/core/serviceaccounts"
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
	"github.com/apikit-dev/apikit/storage"
)

// GroupName is the events.k8s.io group.
const GroupName = "events.k8s.io"

// ObjectReference is core/v1 ObjectReference.
type ObjectReference = serviceaccounts.ObjectReference

// Event is core/v1 Event, the storage version of both.
type Event struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata" protobuf:"1"`

	InvolvedObject      ObjectReference  `json:"involvedObject" protobuf:"2"`
	Reason              string           `json:"reason,omitempty" protobuf:"3"`
	Message             string           `json:"message,omitempty" protobuf:"4"`
	Source              EventSource      `json:"source,omitempty" protobuf:"5"`
	FirstTimestamp      meta.Time        `json:"firstTimestamp,omitempty" protobuf:"6"`
	LastTimestamp       meta.Time        `json:"lastTimestamp,omitempty" protobuf:"7"`
	Count               int32            `json:"count,omitempty" protobuf:"8"`
	Type                string           `json:"type,omitempty" protobuf:"9"`
	EventTime           meta.MicroTime   `json:"eventTime,omitempty" protobuf:"10"`
	Series              *EventSeries     `json:"series,omitempty" protobuf:"11"`
	Action              string           `json:"action,omitempty" protobuf:"12"`
	Related             *ObjectReference `json:"related,omitempty" protobuf:"13"`
	ReportingController string           `json:"reportingComponent" optional:"true" protobuf:"14"`
	ReportingInstance   string           `json:"reportingInstance" optional:"true" protobuf:"15"`
}

// SwaggerDoc describes Event in OpenAPI, in kube-apiserver's words.
func (Event) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                   "Event is a report of an event somewhere in the cluster.  Events have a limited retention time and triggers and messages may evolve with time.  Event consumers should not rely on the timing of an event with a given Reason reflecting a consistent underlying trigger, or the continued existence of events with that Reason.  Events should be treated as informative, best-effort, supplemental data.",
		"action":             "What action was taken/failed regarding to the Regarding object.",
		"count":              "The number of times this event has occurred.",
		"eventTime":          "Time when this Event was first observed.",
		"firstTimestamp":     "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
		"involvedObject":     "The object that this event is about.",
		"lastTimestamp":      "The time at which the most recent occurrence of this event was recorded.",
		"message":            "A human-readable description of the status of this operation.",
		"reason":             "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
		"related":            "Optional secondary object for more complex actions.",
		"reportingComponent": "Name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`.",
		"reportingInstance":  "ID of the controller instance, e.g. `kubelet-xyzf`.",
		"series":             "Data about the Event series this event represents or nil if it's a singleton Event.",
		"source":             "The component reporting this event. Should be a short machine understandable string.",
		"type":               "Type of this event (Normal, Warning), new types could be added in the future",
	}
}

// ListSwaggerDoc describes EventList in OpenAPI, in kube-apiserver's words.
func (Event) ListSwaggerDoc() map[string]string {
	return map[string]string{
		"":         "EventList is a list of events.",
		"items":    "List of events",
		"metadata": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
	}
}

// EventSource names the component that reported an event.
type EventSource struct {
	Component string `json:"component,omitempty" protobuf:"1"`
	Host      string `json:"host,omitempty" protobuf:"2"`
}

// SwaggerDoc describes EventSource in OpenAPI, in kube-apiserver's words.
func (EventSource) SwaggerDoc() map[string]string {
	return map[string]string{
		"":          "EventSource contains information for an event.",
		"component": "Component from which the event is generated.",
		"host":      "Node name on which the event is generated.",
	}
}

// EventSeries is a series of occurrences of one event.
type EventSeries struct {
	Count            int32          `json:"count,omitempty" protobuf:"1"`
	LastObservedTime meta.MicroTime `json:"lastObservedTime,omitempty" protobuf:"2"`
}

// SwaggerDoc describes EventSeries in OpenAPI, in kube-apiserver's words.
func (EventSeries) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                 "EventSeries contain information on series of events, i.e. thing that was/is happening continuously for some time.",
		"count":            "Number of occurrences in this series up to the last heartbeat time",
		"lastObservedTime": "Time of the last occurrence observed",
	}
}

// Stores are the two stores over events' storage: the core group's and
// events.k8s.io's, both holding core v1 Events.
type Stores struct {
	Core   *registry.Store[*Event]
	Events *registry.Store[*Event]
}

// New returns both stores on the storage f gives core events.
func New(f storage.Factory) (*Stores, error) {
	coreResource := meta.GroupResource{Resource: "events"}
	st, err := f.For(coreResource)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	opts := registry.Options[*Event]{
		Resource:        coreResource,
		Kind:            "Event",
		NoGeneration:    true,
		DeleteStatus:    true,
		ShortNames:      []string{"ev"},
		NamespaceScoped: true,
		StorageVersion:  "v1",
		// kube-apiserver takes a PUT without a resourceVersion as
		// unconditional for this kind, and one of a missing event as a
		// create (through either API).
		AllowUnconditionalUpdate: true,
		AllowCreateOnUpdate:      true,
		Strategy:                 strategy{},
		Storage:                  st,
		// kube-apiserver checks a core event's name only as a path
		// segment (rest.BeforeCreate's generic check): "Bad_Name" is
		// a valid core event name.
		NameValidator: meta.ValidatePathSegmentName,
		// kube's events table: kubectl get events.
		NoNameColumn: true,
		NoAgeColumn:  true,
		Columns:      columns,
		Fields:       fields,
	}
	core, err := registry.NewStore(opts)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	opts.Resource = meta.GroupResource{Group: GroupName, Resource: "events"}
	opts.Strategy = strictStrategy{}
	opts.Fields = fieldsV1
	// kube-apiserver's strategy validates the internal core Event: its
	// errors name that kind ("Event \"x\" is invalid", no group).
	opts.InternalKind = meta.GroupKind{Kind: "Event"}
	opts.StorageAPIVersion = "v1"
	opts.KeyRoot = storage.KeyRoot(coreResource)
	ev, err := registry.NewStore(opts)
	if err != nil {
		return nil, fmt.Errorf("events.k8s.io events: %w", err)
	}
	return &Stores{Core: core, Events: ev}, nil
}

// fields are the field selectors kube-apiserver's core/v1 events take.
// source is the reporting controller when the event has no source (an
// events.k8s.io/v1 one), as kube's ToSelectableFields has it.
func fields(e *Event) meta.Set {
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return meta.Set{
		"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.namespace": e.InvolvedObject.Namespace,
		"involvedObject.name": e.InvolvedObject.Name, "involvedObject.uid": e.InvolvedObject.UID,
		"involvedObject.apiVersion": e.InvolvedObject.APIVersion, "involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath": e.InvolvedObject.FieldPath,
		"reason":                   e.Reason, "reportingComponent": e.ReportingController, "source": source, "type": e.Type,
	}
}

// fieldsV1 are the field selectors events.k8s.io/v1 takes: the same
// fields in that version's names (regarding.*, reportingController), and
// neither source nor the involvedObject.* names, which kube-apiserver
// refuses there ("field label not supported").
func fieldsV1(e *Event) meta.Set {
	return meta.Set{
		"regarding.kind": e.InvolvedObject.Kind, "regarding.namespace": e.InvolvedObject.Namespace,
		"regarding.name": e.InvolvedObject.Name, "regarding.uid": e.InvolvedObject.UID,
		"regarding.apiVersion": e.InvolvedObject.APIVersion, "regarding.resourceVersion": e.InvolvedObject.ResourceVersion,
		"regarding.fieldPath": e.InvolvedObject.FieldPath,
		"reason":              e.Reason, "reportingController": e.ReportingController, "type": e.Type,
	}
}

type strategy struct {
	registry.DefaultStrategy[*Event]
}

func (strategy) Validate(_ context.Context, e *Event) meta.FieldErrors { return Validate(e) }

func (strategy) ValidateUpdate(_ context.Context, e, _ *Event) meta.FieldErrors { return Validate(e) }

// strictStrategy is events.k8s.io/v1's: kube-apiserver validates a write
// through that API more strictly than one through core v1 (its strategy
// reads the request's group version; here each API has its own store).
type strictStrategy struct{ strategy }

func (strictStrategy) Validate(_ context.Context, e *Event) meta.FieldErrors {
	return dedupe(ValidateStrict(e))
}

func (strictStrategy) ValidateUpdate(_ context.Context, e, old *Event) meta.FieldErrors {
	return dedupe(ValidateStrictUpdate(e, old))
}

// dedupe drops the errors that repeat an earlier one, as kube-apiserver's
// event strategy does: it runs declarative validation, whose filtering of
// the handwritten errors goes through an aggregate that keeps each
// message once (a changed reason, which ValidateStrictUpdate reports
// twice as kube's list does, reaches the client once).
func dedupe(errs meta.FieldErrors) meta.FieldErrors {
	seen := make(map[string]bool, len(errs))
	out := errs[:0:0]
	for _, e := range errs {
		if msg := e.Error(); !seen[msg] {
			seen[msg] = true
			out = append(out, e)
		}
	}
	return out
}

// Length limits of an event's fields, as kube-apiserver's.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// Validate checks an event as kube-apiserver does for core v1 writes: an
// event without eventTime (an old-style one) names an object of its own
// namespace; a new-style one needs its reporting controller (named
// reportingComponent, as core/v1 spells it), instance, action and reason.
func Validate(e *Event) meta.FieldErrors { return validateLegacy(e, "reportingComponent") }

// validateLegacy is kube-apiserver's legacyValidateEvent, which both APIs
// run; rc is the reporting controller's name in the request's version.
// The namespace is the generic metadata check's (metadata.namespace).
func validateLegacy(e *Event, rc string) meta.FieldErrors {
	var errs meta.FieldErrors
	involvedNS := meta.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != "" && e.Namespace != "default" {
				errs = append(errs, meta.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, meta.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		return errs
	}
	if e.InvolvedObject.Namespace == "" && e.Namespace != "default" && e.Namespace != "kube-system" {
		errs = append(errs, meta.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	rcPath := meta.NewPath(rc)
	if e.ReportingController == "" {
		errs = append(errs, meta.Required(rcPath, ""))
	}
	for _, msg := range meta.ValidateQualifiedName(e.ReportingController) {
		errs = append(errs, meta.Invalid(rcPath, e.ReportingController, msg))
	}
	errs = append(errs, requiredAtMost(meta.NewPath("reportingInstance"), e.ReportingInstance, reportingInstanceLengthLimit)...)
	errs = append(errs, requiredAtMost(meta.NewPath("action"), e.Action, actionLengthLimit)...)
	errs = append(errs, requiredAtMost(meta.NewPath("reason"), e.Reason, reasonLengthLimit)...)
	if len(e.Message) > noteLengthLimit {
		errs = append(errs, meta.Invalid(meta.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
	}
	return errs
}

// ValidateStrict checks an event created through events.k8s.io/v1 as
// kube-apiserver does (ValidateEventCreate for that version): Validate's
// checks (naming reportingController so), then the metadata with RFC 1123 subdomain names, the series, a
// required eventTime, a type of Normal or Warning, and none of the
// deprecated core fields.
func ValidateStrict(e *Event) meta.FieldErrors {
	errs := validateLegacy(e, "reportingController")
	errs = append(errs, registry.ValidateObjectMeta(&e.ObjectMeta, true, registry.ValidateDNSSubdomainName)...)
	errs = append(errs, validateSeries(e)...)
	if e.EventTime.IsZero() {
		errs = append(errs, meta.Required(meta.NewPath("eventTime"), ""))
	}
	if e.Type != "Normal" && e.Type != "Warning" {
		errs = append(errs, meta.Invalid(meta.NewPath("type"), "", "has invalid value: "+e.Type))
	}
	for _, f := range []struct {
		name  string
		isSet bool
	}{
		{"firstTimestamp", !e.FirstTimestamp.IsZero()},
		{"lastTimestamp", !e.LastTimestamp.IsZero()},
		{"count", e.Count != 0},
		{"source", e.Source.Component != "" || e.Source.Host != ""},
	} {
		if f.isSet {
			errs = append(errs, meta.Invalid(meta.NewPath(f.name), "", "needs to be unset"))
		}
	}
	return errs
}

// ValidateStrictUpdate checks an update through events.k8s.io/v1 as
// kube-apiserver does (ValidateEventUpdate for that version): Validate's
// checks, the metadata's changes (again: kube's strategy repeats the
// generic check), a changed series, and every field but the series and
// the metadata immutable.
func ValidateStrictUpdate(e, old *Event) meta.FieldErrors {
	errs := validateLegacy(e, "reportingController")
	errs = append(errs, registry.ValidateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta)...)
	if !reflect.DeepEqual(e.Series, old.Series) {
		errs = append(errs, validateSeries(e)...)
	}
	for _, f := range []struct {
		name     string
		new, old any
	}{
		{"involvedObject", e.InvolvedObject, old.InvolvedObject},
		{"reason", e.Reason, old.Reason},
		{"message", e.Message, old.Message},
		{"source", e.Source, old.Source},
		{"firstTimestamp", e.FirstTimestamp, old.FirstTimestamp},
		{"lastTimestamp", e.LastTimestamp, old.LastTimestamp},
		{"count", e.Count, old.Count},
		// kube's list names reason twice, so a changed reason is
		// reported twice.
		{"reason", e.Reason, old.Reason},
		{"type", e.Type, old.Type},
		{"eventTime", e.EventTime, old.EventTime},
		{"action", e.Action, old.Action},
		{"related", e.Related, old.Related},
		{"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance},
	} {
		if !immutableEqual(f.new, f.old) {
			errs = append(errs, meta.Invalid(meta.NewPath(f.name), f.new, "field is immutable"))
		}
	}
	return errs
}

// immutableEqual compares as apimachinery's semantic equality does for
// these fields: times by their instant, the rest deeply.
func immutableEqual(a, b any) bool {
	switch a := a.(type) {
	case meta.Time:
		return a.Equal(b.(meta.Time).Time)
	case meta.MicroTime:
		return a.Equal(b.(meta.MicroTime).Time)
	}
	return reflect.DeepEqual(a, b)
}

// validateSeries is kube-apiserver's validateV1EventSeries.
func validateSeries(e *Event) meta.FieldErrors {
	if e.Series == nil {
		return nil
	}
	var errs meta.FieldErrors
	if e.Series.Count < 2 {
		errs = append(errs, meta.Invalid(meta.NewPath("series.count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		errs = append(errs, meta.Required(meta.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}

func requiredAtMost(p *meta.Path, v string, limit int) meta.FieldErrors {
	switch {
	case v == "":
		return meta.FieldErrors{meta.Required(p, "")}
	case len(v) > limit:
		return meta.FieldErrors{meta.Invalid(p, "", fmt.Sprintf("can have at most %v characters", limit))}
	}
	return nil
}
