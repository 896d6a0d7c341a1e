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
	meta.ObjectMeta `json:"metadata" protobuf:"1"`

	EventTime                meta.MicroTime   `json:"eventTime" description:"eventTime is the time when this Event was first observed." protobuf:"2"`
	Series                   *EventSeries     `json:"series,omitempty" description:"series is data about the Event series this event represents or nil if it's a singleton Event." protobuf:"3"`
	ReportingController      string           `json:"reportingController,omitempty" description:"reportingController is the name of the controller that emitted this Event." protobuf:"4"`
	ReportingInstance        string           `json:"reportingInstance,omitempty" description:"reportingInstance is the ID of the controller instance." protobuf:"5"`
	Action                   string           `json:"action,omitempty" description:"action is what action was taken/failed regarding to the regarding object." protobuf:"6"`
	Reason                   string           `json:"reason,omitempty" description:"reason is why the action was taken." protobuf:"7"`
	Regarding                ObjectReference  `json:"regarding,omitempty" description:"regarding contains the object this Event is about." protobuf:"8"`
	Related                  *ObjectReference `json:"related,omitempty" description:"related is the optional secondary object for more complex actions." protobuf:"9"`
	Note                     string           `json:"note,omitempty" description:"note is a human-readable description of the status of this operation." protobuf:"10"`
	Type                     string           `json:"type,omitempty" description:"type is the type of this event (Normal, Warning)." protobuf:"11"`
	DeprecatedSource         EventSource      `json:"deprecatedSource,omitempty" description:"deprecatedSource is the deprecated field assuring backward compatibility with core.v1 Event type." protobuf:"12"`
	DeprecatedFirstTimestamp meta.Time        `json:"deprecatedFirstTimestamp,omitempty" description:"deprecatedFirstTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type." protobuf:"13"`
	DeprecatedLastTimestamp  meta.Time        `json:"deprecatedLastTimestamp,omitempty" description:"deprecatedLastTimestamp is the deprecated field assuring backward compatibility with core.v1 Event type." protobuf:"14"`
	DeprecatedCount          int32            `json:"deprecatedCount,omitempty" description:"deprecatedCount is the deprecated field assuring backward compatibility with core.v1 Event type." protobuf:"15"`
}

// SwaggerDoc describes EventV1 in OpenAPI.
func (EventV1) SwaggerDoc() map[string]string {
	return map[string]string{"": "Event is a report of an event somewhere in the cluster. It generally denotes some state change in the system."}
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
