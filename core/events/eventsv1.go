package events

import (
	"github.com/apikit-dev/apikit/meta"
	"github.com/apikit-dev/apikit/registry"
)

// EventV1 is events.k8s.io/v1 Event: the same event, with the fields
// renamed (regarding, note, reportingController) and the core ones kept as
// deprecated*.
type EventV1 struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata" optional:"true" protobuf:"1"`

	EventTime                meta.MicroTime   `json:"eventTime" protobuf:"2"`
	Series                   *EventSeries     `json:"series,omitempty" protobuf:"3"`
	ReportingController      string           `json:"reportingController,omitempty" protobuf:"4"`
	ReportingInstance        string           `json:"reportingInstance,omitempty" protobuf:"5"`
	Action                   string           `json:"action,omitempty" protobuf:"6"`
	Reason                   string           `json:"reason,omitempty" protobuf:"7"`
	Regarding                ObjectReference  `json:"regarding,omitempty" protobuf:"8"`
	Related                  *ObjectReference `json:"related,omitempty" protobuf:"9"`
	Note                     string           `json:"note,omitempty" protobuf:"10"`
	Type                     string           `json:"type,omitempty" protobuf:"11"`
	DeprecatedSource         EventSource      `json:"deprecatedSource,omitempty" protobuf:"12"`
	DeprecatedFirstTimestamp meta.Time        `json:"deprecatedFirstTimestamp,omitempty" protobuf:"13"`
	DeprecatedLastTimestamp  meta.Time        `json:"deprecatedLastTimestamp,omitempty" protobuf:"14"`
	DeprecatedCount          int32            `json:"deprecatedCount,omitempty" protobuf:"15"`
}

// SwaggerDoc describes EventV1 in OpenAPI, in kube-apiserver's words.
func (EventV1) SwaggerDoc() map[string]string {
	return map[string]string{
		"":                         "Event is a report of an event somewhere in the cluster. It generally denotes some state change in the system. Events have a limited retention time and triggers and messages may evolve with time.  Event consumers should not rely on the timing of an event with a given Reason reflecting a consistent underlying trigger, or the continued existence of events with that Reason.  Events should be treated as informative, best-effort, supplemental data.",
		"action":                   "action is what action was taken/failed regarding to the regarding object. It is machine-readable. This field cannot be empty for new Events and it can have at most 128 characters.",
		"deprecatedCount":          "deprecatedCount is the deprecated field assuring backward compatibility with core.v1 Event type.",
		"deprecatedFirstTimestamp": "deprecatedFirstTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.",
		"deprecatedLastTimestamp":  "deprecatedLastTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type.",
		"deprecatedSource":         "deprecatedSource is the deprecated field assuring backward compatibility with core.v1 Event type.",
		"eventTime":                "eventTime is the time when this Event was first observed. It is required.",
		"metadata":                 "metadata is the standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
		"note":                     "note is a human-readable description of the status of this operation. Maximal length of the note is 1kB, but libraries should be prepared to handle values up to 64kB.",
		"reason":                   "reason is why the action was taken. It is human-readable. This field cannot be empty for new Events and it can have at most 128 characters.",
		"regarding":                "regarding contains the object this Event is about. In most cases it's an Object reporting controller implements, e.g. ReplicaSetController implements ReplicaSets and this event is emitted because it acts on some changes in a ReplicaSet object.",
		"related":                  "related is the optional secondary object for more complex actions. E.g. when regarding object triggers a creation or deletion of related object.",
		"reportingController":      "reportingController is the name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`. This field cannot be empty for new Events.",
		"reportingInstance":        "reportingInstance is the ID of the controller instance, e.g. `kubelet-xyzf`. This field cannot be empty for new Events and it can have at most 128 characters.",
		"series":                   "series is data about the Event series this event represents or nil if it's a singleton Event.",
		"type":                     "type is the type of this event (Normal, Warning), new types could be added in the future. It is machine-readable. This field cannot be empty for new Events.",
	}
}

// ListSwaggerDoc describes EventList in OpenAPI, in kube-apiserver's words.
func (EventV1) ListSwaggerDoc() map[string]string {
	return map[string]string{
		"":         "EventList is a list of Event objects.",
		"items":    "items is a list of schema objects.",
		"metadata": "metadata is the standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
	}
}

// ConversionV1 converts between the stored core v1 Event and
// events.k8s.io/v1's, field by field as kube-apiserver does.
var ConversionV1 = registry.Conversion[*Event, *EventV1]{
	ToStorage: func(in *EventV1) (*Event, error) {
		return &Event{ObjectMeta: in.ObjectMeta, InvolvedObject: in.Regarding, Reason: in.Reason, Message: in.Note,
			Source: in.DeprecatedSource, FirstTimestamp: in.DeprecatedFirstTimestamp, LastTimestamp: in.DeprecatedLastTimestamp,
			Count: in.DeprecatedCount, Type: in.Type, EventTime: in.EventTime, Series: in.Series, Action: in.Action,
			Related: in.Related, ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance}, nil
	},
	FromStorage: func(in *Event) (*EventV1, error) {
		return &EventV1{ObjectMeta: in.ObjectMeta, EventTime: in.EventTime, Series: in.Series,
			ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance, Action: in.Action,
			Reason: in.Reason, Regarding: in.InvolvedObject, Related: in.Related, Note: in.Message, Type: in.Type,
			DeprecatedSource: in.Source, DeprecatedFirstTimestamp: in.FirstTimestamp, DeprecatedLastTimestamp: in.LastTimestamp,
			DeprecatedCount: in.Count}, nil
	},
}
