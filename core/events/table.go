package events

import (
	"strconv"
	"strings"
	"time"

	"github.com/apikit-dev/apikit/registry"
)

// columns are kube-apiserver's events table, which kubectl get events
// prints: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (and more with -o wide).
var columns = []registry.Column[*Event]{
	{Name: "Last Seen", Type: "string", Description: "Time when this Event was last observed.", Value: func(e *Event) any { return lastSeen(e) }},
	{Name: "Type", Type: "string", Description: "Type of this event (Normal, Warning), new types could be added in the future.", Value: func(e *Event) any { return e.Type }},
	{Name: "Reason", Type: "string", Description: "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.", Value: func(e *Event) any { return e.Reason }},
	{Name: "Object", Type: "string", Description: "The object that this event is about.", Value: func(e *Event) any {
		return strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
	}},
	{Name: "Subobject", Type: "string", Priority: 1, Description: "The subobject of the object that this event is about.", Value: func(e *Event) any { return e.InvolvedObject.FieldPath }},
	{Name: "Source", Type: "string", Priority: 1, Description: "The component reporting this event.", Value: func(e *Event) any { return source(e) }},
	{Name: "Message", Type: "string", Description: "A human-readable description of the status of this operation.", Value: func(e *Event) any { return e.Message }},
	{Name: "First Seen", Type: "string", Priority: 1, Description: "The time at which the event was first recorded.", Value: func(e *Event) any {
		first := e.FirstTimestamp.Time
		if first.IsZero() {
			first = e.EventTime.Time
		}
		return since(first)
	}},
	{Name: "Count", Type: "string", Priority: 1, Description: "The number of times this event has occurred.", Value: func(e *Event) any { return count(e) }},
	{Name: "Name", Type: "string", Priority: 1, Description: "Name of the event.", Value: func(e *Event) any { return e.Name }},
}

func since(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return registry.HumanDuration(time.Since(t))
}

// lastSeen is when the event last happened, as kube's printer picks it.
func lastSeen(e *Event) string {
	switch {
	case e.Series != nil:
		return since(e.Series.LastObservedTime.Time) // a series: its last occurrence
	case !e.LastTimestamp.IsZero():
		return since(e.LastTimestamp.Time)
	}
	return since(e.EventTime.Time)
}

func source(e *Event) string {
	s := e.Source.Component
	if s == "" {
		s = e.ReportingController
	}
	if e.Source.Host != "" {
		s += ", " + e.Source.Host
	}
	return s
}

func count(e *Event) string {
	if e.Series != nil {
		return itoa(e.Series.Count)
	}
	if e.Count > 1 {
		return itoa(e.Count)
	}
	return "1"
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }
